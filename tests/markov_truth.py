"""Exact truth for the car-pedestrian chain with Markov misses, written from DESIGN.md's braking rule (no chain
code): the reference of the memory-chain tests in tests/verification and tests/pipeline."""

from __future__ import annotations

from functools import cache


def true_hazard(V: int, v0: int, first_miss: float, r: float, q: float) -> float:
    """P(the car passes k): brake one step when the pedestrian is seen and the car could not stop before k at its
    next position; misses Markov in the last observation (P(miss | miss before) = r, P(miss | hit before) = q)."""
    brake = V * (V + 1) // 2
    N, k = brake + 4, brake + 1

    @cache
    def h(x: int, v: int, prev: int) -> float:  # prev: 0 none, 1 hit, 2 miss
        if x > k:
            return 1.0
        if v == 0:
            return 0.0  # stopped at or before k: stays there
        p_miss = first_miss if prev == 0 else (r if prev == 2 else q)
        seen_v = v if x + v <= k - v * (v + 1) // 2 else v - 1
        return p_miss * h(min(x + v, N), v, 2) + (1 - p_miss) * h(min(x + v, N), seen_v, 1)

    return h(1, v0, 0)
