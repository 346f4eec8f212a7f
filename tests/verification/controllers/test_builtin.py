"""Built-in controllers: transitions worked out by hand from the rules in the issue (V = 2: N = 7, k = 4)."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.car_pedestrian import Geometry
from perception_safety.verification.controllers import braking_rule, paper_modes

G = Geometry.reference(2)  # N = 7, k = 4, crosswalk 5


def step(ctl, x, v, kind):
    nx, nv = ctl(np.array([x]), np.array([v]), kind, G)
    return int(nx[0]), int(nv[0])


@pytest.mark.parametrize(("x", "v", "kind", "expected"), [
    ((1), 1, "empty", (2, 2)),   # accelerate by 1 up to V
    (2, 2, "empty", (4, 2)),     # hold V
    (6, 2, "empty", (7, 2)),     # x' = min(x + v, N)
    (3, 0, "empty", (3, 1)),     # a stopped car away from k moves off at speed 1
    (4, 0, "empty", (4, 0)),     # stopped at k: absorbing
    (1, 2, "obs", (3, 1)),       # decelerate by 1 ...
    (3, 1, "obs", (4, 1)),       # ... down to speed 1, then hold
    (2, 0, "obs", (2, 1)),
    (1, 2, "ped", (3, 1)),       # 1 + 2 > k - 3: brake
    (2, 1, "ped", (3, 1)),       # 3 <= k - 1: keep
    (3, 1, "ped", (4, 0)),       # stop at k
    (5, 2, "ped", (7, 1)),       # past k: brake by 1 (too late to stop at k)
    (2, 0, "ped", (2, 1)),       # stopped before k: crawl on
])
def test_paper_modes_transitions(x, v, kind, expected):
    assert step(paper_modes, x, v, kind) == expected


@pytest.mark.parametrize(("x", "v", "kind", "expected"), [
    (1, 1, "empty", (2, 1)), (1, 1, "obs", (2, 1)), (2, 0, "empty", (2, 0)),
    (1, 2, "ped", (3, 1)), (5, 2, "ped", (5, 2)), (4, 0, "obs", (4, 0)),
])
def test_braking_rule_transitions(x, v, kind, expected):
    assert step(braking_rule, x, v, kind) == expected


def test_paper_modes_never_leave_the_dynamics():
    """x' = min(x + v, N) and v' in {v-1, v, v+1} ∩ [0, V] on every state and kind (except (k, 0))."""
    for V in range(1, 7):
        g = Geometry.reference(V)
        x, v = g.cell_speed(np.arange(g.n_states))
        rest = (x == g.stop_cell) & (v == 0)
        for kind in ("ped", "obs", "empty"):
            nx, nv = paper_modes(x, v, kind, g)
            past_k_ped = (kind == "ped") & (x > g.stop_cell)
            assert np.all((nx == np.minimum(x + v, g.road_cells)) | rest | past_k_ped)
            assert np.all((np.abs(nv - v) <= 1) & (nv >= 0) & (nv <= V))
