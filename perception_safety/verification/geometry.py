"""The road of the car–pedestrian example (seed paper Sec. II-C, Fig. 2): cells, speeds, the stop and crosswalk
cells, state indices ``(x - 1)(V + 1) + v`` and the car's labels. Controllers and the chain both read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
