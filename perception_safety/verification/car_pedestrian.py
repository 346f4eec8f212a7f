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
from dataclasses import dataclass

import numpy as np

from perception_safety.verification.builder import AbstractSystem, Controller
from perception_safety.verification.errors import VerificationError

CAR_LABELS = ("stopped", "stop_at_k", "before_k", "at_or_past_k", "past_k", "at_end")


@dataclass(frozen=True)
class Geometry:
    """Road of ``road_cells`` cells of ``cell_length_m``; speeds ``0..max_speed`` cells per step."""

    max_speed: int
    road_cells: int
    stop_cell: int
    crosswalk_cell: int
    cell_length_m: float = 1.0

    def __post_init__(self) -> None:
        V, N, k, c = self.max_speed, self.road_cells, self.stop_cell, self.crosswalk_cell
        if V < 0:
            raise VerificationError(f"max_speed must be >= 0, got {V}")
        if not 1 <= k <= N:
            raise VerificationError(f"stop_cell {k} must lie on the road 1..{N}")
        if not 1 <= c <= N:
            raise VerificationError(f"crosswalk_cell {c} must lie on the road 1..{N}")
        if not (np.isfinite(self.cell_length_m) and self.cell_length_m > 0):
            raise VerificationError(f"cell_length_m must be a positive number, got {self.cell_length_m}")

    @classmethod
    def reference(cls, max_speed: int, cell_length_m: float = 1.0) -> Geometry:
        """``N = V(V+1)/2 + 4``, ``k = V(V+1)/2 + 1``, crosswalk ``k + 1`` (DESIGN.md)."""
        brake = max_speed * (max_speed + 1) // 2
        return cls(max_speed, brake + 4, brake + 1, brake + 2, cell_length_m)

    @property
    def n_states(self) -> int:
        return self.road_cells * (self.max_speed + 1)

    def index(self, x: int, v: int) -> int:
        """State index of ``(x, v)``."""
        return (int(x) - 1) * (self.max_speed + 1) + int(v)

    def cell_speed(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(x, v)`` arrays of state indices."""
        states = np.asarray(states, dtype=np.int64)
        return states // (self.max_speed + 1) + 1, states % (self.max_speed + 1)

    def describe(self, state: int) -> str:
        x, v = self.cell_speed(np.array([state]))
        return f"(x={int(x[0])}, v={int(v[0])})"

    def distance_m(self, states: np.ndarray) -> np.ndarray:
        """Distance from the car's cell to the crosswalk, ``|c - x|`` cells times the cell length."""
        x, _ = self.cell_speed(states)
        return np.abs(self.crosswalk_cell - x) * self.cell_length_m

    def successors(self, states: np.ndarray, sees_pedestrian: bool) -> np.ndarray:
        """The braking-rule controller (`controllers.braking_rule`) for one observation kind, over state indices."""
        from perception_safety.verification.controllers.builtin import braking_rule

        x, v = self.cell_speed(states)
        nx, nv = braking_rule(x, v, "ped" if sees_pedestrian else "empty", self)
        return (nx - 1) * (self.max_speed + 1) + nv

    def car_labels(self, states: np.ndarray) -> dict[str, np.ndarray]:
        x, v = self.cell_speed(states)
        k = self.stop_cell
        return {
            "stopped": v == 0,
            "stop_at_k": (x == k) & (v == 0),
            "before_k": x < k,
            "at_or_past_k": x >= k,
            "past_k": x > k,
            "at_end": x == self.road_cells,
        }


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
        from perception_safety.verification.controllers import resolve_controller, state_controller

        controller = state_controller(resolve_controller("braking_rule"), geometry, pedestrian)

    return AbstractSystem(
        n_states=n,
        controller=controller,
        distance_m=geometry.distance_m,
        labels=labels,
        initial_states=[int(geometry.index(initial_cell, v)) for v in speeds],
        describe=geometry.describe,
    )
