"""Built-in car controllers: the braking rule (the default) and the seed paper's three-mode controller.

Both stop at the stop cell ``k`` on a pedestrian with the rule "keep speed ``v`` while
``x + v ≤ k − v(v+1)/2``, else brake by 1" (stopping distance ``v(v+1)/2`` cells), and ``(k, 0)`` is
absorbing. They differ on the other observations: the braking rule keeps its speed; the paper's modes
(seed paper Sec. II-C, Fig. 8) slow down by 1 per step to speed 1 on ``obs`` and speed up by 1 per step to
``V`` on ``empty``, with ``x' = min(x + v, N)`` and a stopped car away from ``k`` moving off at speed 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from perception_safety.verification.errors import VerificationError

if TYPE_CHECKING:
    from perception_safety.verification.geometry import Geometry


def _stop_for_pedestrian(x: np.ndarray, v: np.ndarray, g: Geometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The braking rule on ``ped``: a moving car not past ``k`` keeps ``v`` or brakes by 1; returns (x', v', acts)."""
    k = g.stop_cell
    acts = (v > 0) & (x <= k)
    keep = x + v <= k - v * (v + 1) // 2
    nv = np.where(acts & ~keep, v - 1, v)
    nx = np.where(acts, np.minimum(x + v, g.road_cells), x)
    return nx, nv, acts


def _absorb(x: np.ndarray, v: np.ndarray, nx: np.ndarray, nv: np.ndarray, g: Geometry) -> tuple[np.ndarray, np.ndarray]:
    at_rest = (x == g.stop_cell) & (v == 0)
    return np.where(at_rest, x, nx), np.where(at_rest, 0, nv)


def braking_rule(x: np.ndarray, v: np.ndarray, kind: str, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """On ``ped`` the braking rule (a stopped car or one past ``k`` stays put); otherwise keep speed."""
    if kind == "ped":
        nx, nv, _ = _stop_for_pedestrian(x, v, geometry)
    else:
        nx, nv = np.minimum(x + v, geometry.road_cells), v.copy()
    return _absorb(x, v, nx, nv, geometry)


def paper_modes(x: np.ndarray, v: np.ndarray, kind: str, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """The seed paper's three modes: ``ped`` braking rule, ``obs`` slow to 1, ``empty`` speed up to V.

    Past ``k`` on ``ped`` the car brakes by 1 (it can no longer stop in time); a stopped car not at ``k``
    moves off at speed 1 whatever it sees.
    """
    g = geometry
    nx = np.minimum(x + v, g.road_cells)
    if kind == "ped":
        bx, bv, acts = _stop_for_pedestrian(x, v, g)
        nx, nv = np.where(acts, bx, nx), np.where(acts, bv, np.maximum(v - 1, 0))
    elif kind == "obs":
        nv = np.where(v > 1, v - 1, 1)
    elif kind == "empty":
        nv = np.minimum(v + 1, g.max_speed)
    else:
        raise VerificationError(f"paper_modes: unknown observation kind {kind!r}")
    nv = np.where((v == 0) & (x != g.stop_cell), np.minimum(1, g.max_speed), nv)
    return _absorb(x, v, nx, nv, g)


BUILTIN_CONTROLLERS = {"braking_rule": braking_rule, "paper_modes": paper_modes}
"""Built-in controllers by the name ``verification.controller`` gives them."""
