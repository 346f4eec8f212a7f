"""One chain of the sweep (variant, true environment, V) as a `storm_batch` computation, so that the sweep's
chains have their Storm checks answered together (`sweep.run_sweep`, `sweep_each.sweep_each`).

Per chain: build (Algorithm 3), check every spec, interval-chain bounds, the sampling unit, the independence test
and memory chain, the per-episode chains and the posterior; then its result rows and chain record. The
(variant, true environment) part that does not depend on V (`Combo`: counts, posterior draws, observation runs)
is made once for all its max speeds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perception_safety.evaluation.clustered import MIN_CLUSTERS
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.builder import MarkovChain, ObservationModel, build_chain
from perception_safety.verification.car_model import car_system, counted_observations
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.controllers import ResolvedController
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.interval_chain import decision_bins
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.memory_check import MemoryData, check_memory_steps
from perception_safety.verification.per_episode import episodes_and_draws
from perception_safety.verification.posterior import chain_skeleton, round_to_error
from perception_safety.verification.specs import check_steps
from perception_safety.verification.storm_batch import Steps, timed
from perception_safety.verification.uncertainty import chain_bounds_steps, chain_posterior, posterior_draws


@dataclass(frozen=True, eq=False)
class Combo:
    """What one (variant, true environment) shares over its max speeds: the counts, their point model, the
    posterior draws and the memory check's data (None without observation runs)."""

    confusion: DistanceConfusion
    cfg: VerificationConfig
    variant: str
    env_name: str
    specs: dict[str, str]
    controller: ResolvedController
    counted: CountedObservations
    obs: ObservationModel
    draws: np.ndarray | None
    memory: MemoryData | None

    @classmethod
    def make(cls, confusion: DistanceConfusion, cfg: VerificationConfig, variant: str, env_name: str,
             specs: dict[str, str], controller: ResolvedController, name: str | None,
             episodes: Sequence[DistanceConfusion], observation_runs: Mapping[tuple[str, str], ObservationRuns] | None,
             ) -> Combo:
        counted = counted_observations(confusion, variant, cfg.true_envs[env_name], cfg.beyond_last_bin, name,
                                       episodes)
        draws = posterior_draws(counted, cfg, variant, env_name)
        runs = (observation_runs or {}).get((variant, env_name))
        memory = None if runs is None else MemoryData(counted, runs, pedestrian_column(confusion, variant, counted,
                                                                                         cfg))
        return cls(confusion, cfg, variant, env_name, specs, controller, counted, counted.model(), draws, memory)


@dataclass(frozen=True, eq=False)
class ChainDone:
    """One chain's result rows, its record (sizes, bounds, unit, timings), its warnings, and the chain (export)."""

    rows: list[dict[str, Any]]
    record: dict[str, Any]
    warnings: list[str]
    chain: MarkovChain


def chain_steps(c: Combo, V: int) -> Steps[ChainDone]:
    """Build, check, bound and summarise the chain of ``c`` at max speed ``V`` (module docstring)."""
    cfg, specs, counted, obs = c.cfg, c.specs, c.counted, c.obs
    warnings: list[str] = []
    t0 = time.perf_counter()
    g, system = car_system(c.confusion, cfg, c.variant, c.env_name, V, c.controller)
    chain = build_chain(system, obs)
    build = time.perf_counter() - t0
    starts = [int(s) for s in chain.initial_states]
    _, v0 = g.cell_speed(np.array(starts))
    seconds = [0.0]
    values = {}
    for spec_name, formula in specs.items():
        values[spec_name] = yield from timed(check_steps(chain, formula), seconds)
    check, seconds[0] = seconds[0], 0.0
    where = f"{c.variant}/{c.env_name}/V={V}"

    def uncertainty() -> Steps[tuple[Any, ...]]:
        bins = decision_bins(system, obs)
        bounds, info = yield from chain_bounds_steps(system, counted, specs, cfg, where, warnings, bins)
        unit = sampling_unit(counted, info.get("decision_bins"), where, warnings)
        mem = None
        if c.memory is not None:
            mem = yield from check_memory_steps(system, c.memory, specs, cfg, where, warnings, bins)
        skeleton = chain_skeleton(system, obs)
        per_ep, drawn = None, None
        if counted.clusters is not None:  # the episodes' chains and the posterior's draws: one solve
            per_ep, drawn = episodes_and_draws(system, counted, skeleton, specs, bins, cfg.alpha, where,
                                               warnings, c.draws)
        return bounds, info, unit, mem, skeleton, per_ep, drawn

    bounds, info, unit, mem, skeleton, per_ep, drawn = yield from timed(uncertainty(), seconds)
    t3 = time.perf_counter()
    post = chain_posterior(system, obs, c.draws, specs, cfg, warnings, skeleton, drawn)
    t4 = time.perf_counter()
    rows = []
    for spec_name in specs:
        b, q = bounds.get(spec_name), post.get(spec_name)
        for i, (s, v) in enumerate(zip(starts, v0.tolist(), strict=True)):
            row = {
                "variant": c.variant, "true_env": c.env_name, "spec": spec_name, "max_speed": V,
                "initial_speed": int(v), "probability": float(values[spec_name][s]),
                "lower": None if b is None else float(b.lower[s]),
                "upper": None if b is None else float(b.upper[s]),
                **unit["row"],
                **({} if mem is None else mem.row(spec_name, i)),
                **({} if per_ep is None else per_ep.row(spec_name, i)),
            }
            if c.draws is not None:
                err = None if q is None or q.mc_error is None else float(q.mc_error[i])
                row.update({
                    f"posterior_{k}": None if q is None else round_to_error(float(getattr(q, k)[i]), err)
                    for k in ("lower", "upper", "mean")
                })
                row["posterior_mc_error"] = None if err is None else float(f"{err:.2g}")
            rows.append(row)
    record = {
        "variant": c.variant, "true_env": c.env_name, "max_speed": V, "n_states": chain.n_states,
        "n_transitions": chain.n_transitions, "road_cells": g.road_cells, "stop_cell": g.stop_cell,
        "crosswalk_cell": g.crosswalk_cell, **info, **({} if mem is None else mem.info),
        "unit": unit["chain"], "build_seconds": round(build, 6),
        "check_seconds": round(check, 6), "bounds_seconds": round(seconds[0], 6),
        "posterior_seconds": round(t4 - t3, 6),
    }
    return ChainDone(rows, record, warnings, chain)


def pedestrian_column(confusion: DistanceConfusion, variant: str, counted: CountedObservations,
                      cfg: VerificationConfig) -> int:
    """The matrix column of the pedestrian whose runs the independence test reads: the class (class variants)
    or the environment's one true set (proposition variants)."""
    if variant.startswith("class"):
        return list(confusion.class_labels).index(cfg.pedestrian_label)
    return int(counted.cells[0, 0, 1])


def sampling_unit(counted: CountedObservations, bins: list[int] | None, where: str,
                  warnings: list[str]) -> dict[str, dict[str, Any]]:
    """What the chain's intervals rest on: episodes (their number in the columns the chain decides in, the design
    effect) or frames (no cluster information); fewer than `MIN_CLUSTERS` episodes make its rows INCONCLUSIVE."""
    d = counted.design()
    if d is None:
        return {"row": {}, "chain": {"kind": "frames", "note": "no cluster information: frames taken as independent"}}
    cols = counted.true_columns
    sel = np.asarray(bins if bins else range(counted.counts.shape[0]), dtype=np.int64)
    clusters = int(d.clusters[np.ix_(sel, cols)].min())
    deff = float(d.deff[np.ix_(sel, cols)].max())
    status = "inconclusive" if clusters < MIN_CLUSTERS else "ok"
    if status == "inconclusive":
        warnings.append(f"{where}: the chain's columns rest on {clusters} episode(s) (< {MIN_CLUSTERS}): its bounds "
                        "and posterior are INCONCLUSIVE for any requirement")
    return {"row": {"clusters": clusters, "status": status},
            "chain": {"kind": "episodes", "clusters": clusters, "design_effect": deff}}
