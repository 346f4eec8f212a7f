"""The car–pedestrian running example (seed paper Sec. II-C, Fig. 2) as an `AbstractSystem`.

States ``(x, v)``: cells ``x = 1..N``, speeds ``v = 0..V``; index ``(x - 1)(V + 1) + v``. Reference
geometry for a largest speed ``V``: ``N = V(V+1)/2 + 4``, stop cell ``k = V(V+1)/2 + 1``, crosswalk
``k + 1``. The observation is drawn from the bin of ``|crosswalk - x|`` cells (pre-move position).
The controller is pluggable (`perception_safety.verification.controllers`); the default braking rule
(correct by construction for φ1-φ3): on an observation containing the pedestrian a moving car not past
``k`` goes to ``min(x+v, N)`` keeping ``v`` when ``x + v <= k - v(v+1)/2`` and braking to ``v - 1``
otherwise (a stopped car or one past ``k`` stays put); on any other observation it keeps its speed;
``(k, 0)`` is absorbing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from perception_safety.verification.builder import AbstractSystem, Controller
from perception_safety.verification.controllers import resolve_controller, state_controller
from perception_safety.verification.controllers.builtin import braking_rule
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.geometry import CAR_LABELS, Geometry

__all__ = ["CAR_LABELS", "Geometry", "braking_successors", "car_pedestrian_system"]



def braking_successors(geometry: Geometry, states: np.ndarray, sees_pedestrian: bool) -> np.ndarray:
    """The braking-rule controller (`controllers.braking_rule`) for one observation kind, over state indices."""
    x, v = geometry.cell_speed(states)
    nx, nv = braking_rule(x, v, "ped" if sees_pedestrian else "empty", geometry)
    return (nx - 1) * (geometry.max_speed + 1) + nv


def car_pedestrian_system(
    geometry: Geometry,
    env_labels: Mapping[str, bool],
    initial_speeds: Iterable[int],
    pedestrian: str = "ped",
    initial_cell: int = 1,
    controller: Controller | None = None,
) -> AbstractSystem:
    """The system for one true environment; ``env_labels`` are its propositions (e.g. ``{"ped": True}``).

    ``controller`` is K over state indices (`controllers.state_controller`); by default the braking rule,
    for which an observation "contains the pedestrian" when ``pedestrian`` is among its predicted labels.
    """
    speeds = sorted({int(v) for v in initial_speeds})
    if not speeds or speeds[0] < 0 or speeds[-1] > geometry.max_speed:
        raise VerificationError(f"initial speeds {speeds} must be within 0..{geometry.max_speed}")
    if not 1 <= initial_cell <= geometry.road_cells:
        raise VerificationError(f"initial cell {initial_cell} must lie on the road 1..{geometry.road_cells}")
    n = geometry.n_states
    states = np.arange(n, dtype=np.int64)
    labels = geometry.car_labels(states)
    for name, value in env_labels.items():
        if name in labels:
            raise VerificationError(f"environment label {name!r} clashes with a car label {list(CAR_LABELS)}")
        labels[name] = np.full(n, bool(value))

    if controller is None:
        controller = state_controller(resolve_controller("braking_rule"), geometry, pedestrian)

    return AbstractSystem(
        n_states=n,
        controller=controller,
        distance_m=geometry.distance_m,
        labels=labels,
        initial_states=[int(geometry.index(initial_cell, v)) for v in speeds],
        describe=geometry.describe,
    )
