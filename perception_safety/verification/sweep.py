"""Satisfaction probability vs initial speed for each max speed, variant and true environment (Fig. 8).

Variants: ``class`` / ``prop`` use the pooled (canonical) matrices, ``*_by_distance`` the
distance-parametrised ones. One chain per (variant, environment, V); Storm returns ``P(s ⊨ φ)`` for
every state, read at the initial states ``(1, v0)`` (Proposition 1).
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.evaluation.clustered import MIN_CLUSTERS
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.safe_io import atomic_open, write_text
from perception_safety.verification.builder import AbstractSystem, MarkovChain, ObservationModel, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.config import GeometryConfig, TrueEnvConfig, VerificationConfig
from perception_safety.verification.controllers import ResolvedController, resolve_controller, state_controller
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.export import export_drn, export_prism_explicit
from perception_safety.verification.interval_chain import decision_bins
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.memory_check import MemoryData, check_memory
from perception_safety.verification.per_episode import episode_chains
from perception_safety.verification.posterior import chain_skeleton, round_to_error
from perception_safety.verification.specs import check, resolve_specs
from perception_safety.verification.uncertainty import chain_bounds, chain_posterior, posterior_draws

FORMAT = "perception_safety.verification/1"


@dataclass(frozen=True)
class SweepResult:
    """``results``: one record per (variant, true_env, spec, max_speed, initial_speed) with ``probability``,
    ``lower``/``upper`` (interval chain, None when off or not computable) and ``posterior_*``; ``chains``:
    sizes/times; ``warnings``: what the numbers cannot be read without.
    """

    results: tuple[dict[str, Any], ...]
    chains: tuple[dict[str, Any], ...]
    specs: dict[str, str]
    warnings: tuple[str, ...] = ()


def geometry_for(max_speed: int, cfg: GeometryConfig) -> Geometry:
    """The reference geometry for V, with any configured overrides."""
    ref = Geometry.reference(max_speed, cfg.cell_length_m)
    stop = cfg.stop_cell if cfg.stop_cell is not None else ref.stop_cell
    return Geometry(
        max_speed=max_speed,
        road_cells=cfg.road_cells if cfg.road_cells is not None else ref.road_cells,
        stop_cell=stop,
        crosswalk_cell=stop + cfg.crosswalk_offset,
        cell_length_m=cfg.cell_length_m,
    )


def counted_observations(
    confusion: DistanceConfusion, variant: str, env: TrueEnvConfig, beyond_last_bin: str = "error",
    name: str | None = None, episodes: Sequence[DistanceConfusion] = (),
) -> CountedObservations:
    """The counts behind μ_k(·, x_e) of one variant for one true environment (eqs. 5, 8, 9); with the
    ``episodes``' own matrices (summing to ``confusion``), the episodes are the independent unit."""
    kind = "class" if variant.startswith("class") else "prop"
    pooled = not variant.endswith("_by_distance")
    counts = confusion.counts(kind, pooled=pooled)
    clusters = np.stack([np.asarray(e.counts(kind, pooled=pooled)) for e in episodes]) if episodes else None
    edges: list[tuple[float, float]] | None = None if pooled else list(confusion.bin_edges)
    if edges is not None and beyond_last_bin == "last_bin":
        edges[-1] = (edges[-1][0], float("inf"))
    source = f"{name or confusion.source or 'matrices'} [{variant}]"
    if kind == "class":
        return CountedObservations.for_class(counts, confusion.class_labels, env.class_objects, edges, source,
                                             clusters)
    return CountedObservations.for_prop(counts, confusion.prop_labels, env.prop, edges, confusion.empty_label,
                                        source, clusters)


def observation_model(
    confusion: DistanceConfusion, variant: str, env: TrueEnvConfig, beyond_last_bin: str = "error",
    name: str | None = None, alpha: float | None = None, bins: np.ndarray | None = None,
) -> ObservationModel:
    """μ_k(·, x_e) of one variant for one true environment; with ``alpha``, its Clopper–Pearson intervals
    (jointly at ``1 − alpha`` over the used columns in ``bins``, default every bin)."""
    return counted_observations(confusion, variant, env, beyond_last_bin, name).model(alpha, bins)


def env_labels(
    confusion: DistanceConfusion, variant: str, env: TrueEnvConfig, pedestrian: str = "ped"
) -> dict[str, bool]:
    """The environment's atomic propositions: one label per class, true when the class is present.

    The built-in specs name ``ped``; when the pedestrian class is called otherwise (``pedestrian_label``),
    ``ped`` is added as an alias for it.
    """
    by_class = variant.startswith("class")
    present = set(env.class_objects) if by_class else {p.strip() for p in env.prop.split(",")}
    out = {}
    for c in confusion.classes:
        if not c.isidentifier():
            raise VerificationError(f"class {c!r} cannot be a Storm label; rename it (letters, digits, '_')")
        out[c] = c in present
    out.setdefault("ped", pedestrian in present)
    return out


def car_system(
    confusion: DistanceConfusion, cfg: VerificationConfig, variant: str, env_name: str, max_speed: int,
    controller: ResolvedController | None = None,
) -> tuple[Geometry, AbstractSystem]:
    """The car–pedestrian system for one variant, environment and max speed, run by ``controller``."""
    env = cfg.true_envs[env_name]
    g = geometry_for(max_speed, cfg.geometry)
    speeds = cfg.initial_speeds if cfg.initial_speeds is not None else list(range(1, max_speed + 1))
    speeds = [v for v in speeds if v <= max_speed]
    if not speeds:
        raise VerificationError(f"initial_speeds {cfg.initial_speeds}: none is within 0..{max_speed} (max speed)")
    labels = env_labels(confusion, variant, env, cfg.pedestrian_label)
    ml = cfg.monitor_loop
    k = state_controller(controller or resolve_controller(cfg.controller), g, cfg.pedestrian_label,
                         confusion.empty_label, ml.fail_safe, ml.emergency_deceleration)
    return g, car_pedestrian_system(g, labels, speeds, cfg.pedestrian_label, cfg.geometry.initial_cell, k)


def build_variant_chain(
    confusion: DistanceConfusion, cfg: VerificationConfig, variant: str, env_name: str, max_speed: int,
    name: str | None = None, controller: ResolvedController | None = None,
) -> tuple[Geometry, MarkovChain]:
    """Algorithm 3 on the car–pedestrian system for one variant, environment and max speed."""
    g, system = car_system(confusion, cfg, variant, env_name, max_speed, controller)
    env = cfg.true_envs[env_name]
    return g, build_chain(system, observation_model(confusion, variant, env, cfg.beyond_last_bin, name))


def run_sweep(
    confusion: DistanceConfusion,
    cfg: VerificationConfig,
    export_dir: str | Path | None = None,
    name: str | None = None,
    episodes: Sequence[DistanceConfusion] = (),
    observation_runs: Mapping[tuple[str, str], ObservationRuns] | None = None,
) -> SweepResult:
    """Every configured (variant, true env, max speed): build, check every spec, collect P(s0 ⊨ φ).

    ``name`` (e.g. the matrices' file path) prefixes error messages; ``export_dir`` receives the chains
    when ``cfg.export`` asks for them; ``episodes`` (each episode's matrices) make the episode the unit of the
    bounds and the posterior (rows then carry ``clusters`` and ``status``) and give each episode its own chain
    (rows then carry ``episode_mean``/``episode_lower``/``episode_upper``, `per_episode`); ``observation_runs``
    (per (variant, true env), the pedestrian column's consecutive observations) test the chain's independence assumption
    (`memory_check`: rows then carry ``independence`` and, with runs of misses, the memory chain's ``memory_*``).
    """
    specs = resolve_specs(cfg.specs, cfg.custom_specs)
    for env_name in cfg.true_envs:
        if not env_name:
            raise VerificationError("true_envs: empty environment name")
    controller = resolve_controller(cfg.controller)
    results: list[dict[str, Any]] = []
    chains: list[dict[str, Any]] = []
    warnings: list[str] = []
    for variant in cfg.variants:
        for env_name in cfg.true_envs:
            counted = counted_observations(confusion, variant, cfg.true_envs[env_name], cfg.beyond_last_bin, name,
                                           episodes)
            obs = counted.model()
            draws = posterior_draws(counted, cfg, variant, env_name)
            runs = (observation_runs or {}).get((variant, env_name))
            memory = None if runs is None else MemoryData(counted, runs,
                                                          pedestrian_column(confusion, variant, counted, cfg))
            for V in cfg.max_speeds:
                t0 = time.perf_counter()
                g, system = car_system(confusion, cfg, variant, env_name, V, controller)
                chain = build_chain(system, obs)
                chain.storm_model()
                t1 = time.perf_counter()
                starts = [int(s) for s in chain.initial_states]
                _, v0 = g.cell_speed(np.array(starts))
                values = {spec_name: check(chain, formula) for spec_name, formula in specs.items()}
                t2 = time.perf_counter()
                where = f"{variant}/{env_name}/V={V}"
                bounds, info = chain_bounds(system, counted, specs, cfg, where, warnings)
                unit = sampling_unit(counted, info.get("decision_bins"), where, warnings)
                mem = None if memory is None else check_memory(system, memory, specs, cfg, where, warnings)
                skeleton = chain_skeleton(system, obs)
                per_ep = None if counted.clusters is None else episode_chains(
                    system, counted, skeleton, specs, decision_bins(system, obs), cfg.alpha, where, warnings)
                t3 = time.perf_counter()
                post = chain_posterior(system, obs, draws, specs, cfg, warnings, skeleton)
                t4 = time.perf_counter()
                for spec_name in specs:
                    b, q = bounds.get(spec_name), post.get(spec_name)
                    for i, (s, v) in enumerate(zip(starts, v0.tolist(), strict=True)):
                        row = {
                            "variant": variant, "true_env": env_name, "spec": spec_name, "max_speed": V,
                            "initial_speed": int(v), "probability": float(values[spec_name][s]),
                            "lower": None if b is None else float(b.lower[s]),
                            "upper": None if b is None else float(b.upper[s]),
                            **unit["row"],
                            **({} if mem is None else mem.row(spec_name, i)),
                            **({} if per_ep is None else per_ep.row(spec_name, i)),
                        }
                        if draws is not None:
                            err = None if q is None or q.mc_error is None else float(q.mc_error[i])
                            row.update({
                                f"posterior_{k}": None if q is None else round_to_error(float(getattr(q, k)[i]), err)
                                for k in ("lower", "upper", "mean")
                            })
                            row["posterior_mc_error"] = None if err is None else float(f"{err:.2g}")
                        results.append(row)
                chains.append({
                    "variant": variant, "true_env": env_name, "max_speed": V, "n_states": chain.n_states,
                    "n_transitions": chain.n_transitions, "road_cells": g.road_cells, "stop_cell": g.stop_cell,
                    "crosswalk_cell": g.crosswalk_cell, **info, **({} if mem is None else mem.info),
                    "unit": unit["chain"], "build_seconds": round(t1 - t0, 6),
                    "check_seconds": round(t2 - t1, 6), "bounds_seconds": round(t3 - t2, 6),
                    "posterior_seconds": round(t4 - t3, 6),
                })
                if export_dir is not None and cfg.export != "none":
                    stem = Path(export_dir) / f"{variant}_{env_name}_V{V}"
                    if cfg.export in ("drn", "both"):
                        export_drn(chain, stem.with_suffix(".drn"))
                    if cfg.export in ("prism", "both"):
                        export_prism_explicit(chain, stem)
    return SweepResult(tuple(results), tuple(chains), specs, tuple(dict.fromkeys(warnings)))


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


def to_json_dict(sweep: SweepResult, matrices: str, confusion: DistanceConfusion,
                 cfg: VerificationConfig) -> dict[str, Any]:
    """The ``verification.json`` document."""
    return {
        "format": FORMAT,
        "matrices": matrices,
        "matrices_source": confusion.source,
        "orientation": "observation probabilities are column-normalised cm[pred, true] = P(pred | true)",
        "model": "car-pedestrian (DESIGN.md): N = V(V+1)/2 + 4, k = V(V+1)/2 + 1, crosswalk k + 1 unless configured",
        "controller": resolve_controller(cfg.controller).name,
        "specs": sweep.specs,
        "bounds": bounds_description(cfg),
        "config": cfg.model_dump(by_alias=True),
        "results": list(sweep.results),
        "chains": list(sweep.chains),
        "warnings": list(sweep.warnings),
    }


def bounds_description(cfg: VerificationConfig) -> dict[str, Any]:
    """What ``lower``/``upper`` and ``posterior_*`` mean, for readers of verification.json (docs/verification.md)."""
    return {
        "posterior": {**cfg.posterior.model_dump(), "description": (
            "per confusion column and bin: " + ("P(hit) ~ Beta(hit + prior, rest + prior) (Jeffreys on the diagonal "
                                               "cell vs the rest), the rest split by Dirichlet(rest counts + prior)"
                                               if cfg.posterior.method == "split" else "Dirichlet(counts + prior)")
            + "; with episodes/tracks, counts over the column's design effect x the Korn-Graubard factor; whole "
            "matrices drawn (columns shared by all states); equal-tailed credible interval of P(phi) over the draws; "
            "posterior_* rounded to the decimal of posterior_mc_error (Monte-Carlo standard error of the interval "
            "ends and the mean)")},
        "enabled": cfg.bounds.enabled,
        "alpha": cfg.alpha,
        "method": "interval DTMC: per bin and true column, two-sided Clopper-Pearson interval of each P(obs | env) "
                  "at 1 - alpha/M (M = cells of the used columns x the bins the chain decides in, Bonferroni), so "
                  "every interval of one chain, hence every lower/upper of that chain (all specs, all initial "
                  "speeds), holds jointly at 1 - alpha; transition interval = sum over observations with the same "
                  "controller successor, capped at 1; lower/upper = Storm IDTMC MINIMIZE/MAXIMIZE",
        "simultaneous_level": f"1 - alpha = {1 - cfg.alpha:g} per chain (variant, true_env, max_speed); each "
                              "chain's decision_bins and per_interval_alpha are in chains[]",
    }


def write_json(path: str | Path, document: dict[str, Any]) -> Path:
    path = Path(path)
    write_text(path, json.dumps(document, indent=1) + "\n")
    return path


KEY_COLUMNS = ("variant", "true_env", "spec", "max_speed", "initial_speed")
VALUE_COLUMNS = ("probability", "lower", "upper", "posterior_lower", "posterior_upper", "posterior_mean",
                 "posterior_mc_error", "episode_mean", "episode_lower", "episode_upper")
OPTIONAL = ("posterior", "episode")


def write_csv(path: str | Path, results: tuple[dict[str, Any], ...]) -> Path:
    """``variant,true_env,spec,max_speed,initial_speed,probability,lower,upper,posterior_*,episode_*`` (17
    significant digits; an empty cell where a bound was not computed; posterior and per-episode columns only when
    computed)."""
    path = Path(path)
    cols = [c for c in VALUE_COLUMNS if not c.startswith(OPTIONAL) or any(c in r for r in results)]
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*KEY_COLUMNS, *cols])
        for r in results:
            vals = [r.get(c) for c in cols]
            w.writerow([*(r[c] for c in KEY_COLUMNS), *("" if v is None else f"{v:.17g}" for v in vals)])
    return path
