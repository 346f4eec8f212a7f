"""The car–pedestrian chain's parts for one (variant, true environment, V): geometry, the counts behind μ_k, the
environment's labels and the controlled system (DESIGN.md's model; Algorithm 3 builds the chain from them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.builder import AbstractSystem, ObservationModel
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.config import GeometryConfig, TrueEnvConfig, VerificationConfig
from perception_safety.verification.controllers import ResolvedController, resolve_controller, state_controller
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError


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

