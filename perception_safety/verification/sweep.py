"""Satisfaction probability vs initial speed for each max speed, variant and true environment (Fig. 8).

Variants: ``class`` / ``prop`` use the pooled (canonical) matrices, ``*_by_distance`` the
distance-parametrised ones. One chain per (variant, environment, V); Storm returns ``P(s ⊨ φ)`` for
every state, read at the initial states ``(1, v0)`` (Proposition 1).
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.builder import AbstractSystem, MarkovChain, ObservationModel, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.config import GeometryConfig, TrueEnvConfig, VerificationConfig
from perception_safety.verification.controllers import ResolvedController, resolve_controller, state_controller
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.export import export_drn, export_prism_explicit
from perception_safety.verification.observations import class_observations, prop_observations
from perception_safety.verification.specs import check, resolve_specs

FORMAT = "perception_safety.verification/1"


@dataclass(frozen=True)
class SweepResult:
    """``results``: one record per (variant, true_env, spec, max_speed, initial_speed); ``chains``: sizes/times."""

    results: tuple[dict[str, Any], ...]
    chains: tuple[dict[str, Any], ...]
    specs: dict[str, str]


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


def observation_model(
    confusion: DistanceConfusion, variant: str, env: TrueEnvConfig, beyond_last_bin: str = "error",
    name: str | None = None,
) -> ObservationModel:
    """μ_k(·, x_e) of one variant for one true environment (eqs. 5, 8, 9)."""
    kind = "class" if variant.startswith("class") else "prop"
    pooled = not variant.endswith("_by_distance")
    probs = confusion.probabilities(kind, pooled=pooled)
    edges: list[tuple[float, float]] | None = None if pooled else list(confusion.bin_edges)
    if edges is not None and beyond_last_bin == "last_bin":
        edges[-1] = (edges[-1][0], float("inf"))
    source = f"{name or confusion.source or 'matrices'} [{variant}]"
    if kind == "class":
        return class_observations(probs, confusion.class_labels, env.class_objects, edges, source)
    return prop_observations(probs, confusion.prop_labels, env.prop, edges, confusion.empty_label, source)


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
) -> SweepResult:
    """Every configured (variant, true env, max speed): build, check every spec, collect P(s0 ⊨ φ).

    ``name`` (e.g. the matrices' file path) prefixes error messages; ``export_dir`` receives the chains
    when ``cfg.export`` asks for them.
    """
    specs = resolve_specs(cfg.specs, cfg.custom_specs)
    for env_name in cfg.true_envs:
        if not env_name:
            raise VerificationError("true_envs: empty environment name")
    controller = resolve_controller(cfg.controller)
    results: list[dict[str, Any]] = []
    chains: list[dict[str, Any]] = []
    for variant in cfg.variants:
        for env_name in cfg.true_envs:
            for V in cfg.max_speeds:
                t0 = time.perf_counter()
                g, chain = build_variant_chain(confusion, cfg, variant, env_name, V, name, controller)
                chain.storm_model()
                t1 = time.perf_counter()
                starts = [int(s) for s in chain.initial_states]
                for spec_name, formula in specs.items():
                    values = check(chain, formula)
                    for s in starts:
                        _, v0 = g.cell_speed(np.array([s]))
                        results.append({
                            "variant": variant, "true_env": env_name, "spec": spec_name, "max_speed": V,
                            "initial_speed": int(v0[0]), "probability": float(values[s]),
                        })
                t2 = time.perf_counter()
                chains.append({
                    "variant": variant, "true_env": env_name, "max_speed": V, "n_states": chain.n_states,
                    "n_transitions": chain.n_transitions, "road_cells": g.road_cells, "stop_cell": g.stop_cell,
                    "crosswalk_cell": g.crosswalk_cell, "build_seconds": round(t1 - t0, 6),
                    "check_seconds": round(t2 - t1, 6),
                })
                if export_dir is not None and cfg.export != "none":
                    stem = Path(export_dir) / f"{variant}_{env_name}_V{V}"
                    if cfg.export in ("drn", "both"):
                        export_drn(chain, stem.with_suffix(".drn"))
                    if cfg.export in ("prism", "both"):
                        export_prism_explicit(chain, stem)
    return SweepResult(tuple(results), tuple(chains), specs)


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
        "config": cfg.model_dump(by_alias=True),
        "results": list(sweep.results),
        "chains": list(sweep.chains),
    }


def write_json(path: str | Path, document: dict[str, Any]) -> Path:
    path = Path(path)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


def write_csv(path: str | Path, results: tuple[dict[str, Any], ...]) -> Path:
    """``variant,true_env,spec,max_speed,initial_speed,probability`` (probability with 17 significant digits)."""
    path = Path(path)
    cols = ["variant", "true_env", "spec", "max_speed", "initial_speed", "probability"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in results:
            w.writerow([*(r[c] for c in cols[:-1]), f"{r['probability']:.17g}"])
    return path
