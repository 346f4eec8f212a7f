"""What every car controller shares: the signature, observation kinds, the fail-safe action, range checks.

A car controller is a vectorised callable ``K(x, v, kind, geometry) -> (x', v')`` over int64 arrays of
cells ``x = 1..N`` and speeds ``v = 0..V`` for one observation kind (``ped``, ``obs``, ``empty``): the
seed paper's controller ``K : S × O(x_e) → S`` (Algorithm 3) with the observation reduced to the mode
it selects. A controller that also takes an ``alarm`` keyword acts on the runtime monitor's verdict
itself; otherwise the configured fail-safe action replaces its choice whenever the monitor alarms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from perception_safety.verification.errors import VerificationError

if TYPE_CHECKING:
    from perception_safety.verification.geometry import Geometry

KINDS: tuple[str, ...] = ("ped", "obs", "empty")
"""Observation kinds: the pedestrian is predicted; something else but no pedestrian; nothing."""

ALARM_TAG = "!alarm"
"""Marks an observation outcome on which the runtime monitor alarmed (never a valid class or Storm label)."""

FailSafe = Literal["brake", "stop_now"]


class CarController(Protocol):
    """``(x, v, kind, geometry) -> (x', v')``, vectorised over int64 arrays of equal shape."""

    def __call__(self, x: np.ndarray, v: np.ndarray, kind: str, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
        ...


def observation_kind(
    observation: Sequence[str], pedestrian: str = "ped", empty_label: str = "empty"
) -> tuple[str, bool]:
    """The kind an observation outcome selects and whether the monitor alarmed on it.

    ``ped`` when ``pedestrian`` is among the predicted labels, ``obs`` when any other label is predicted,
    ``empty`` when none is (class-labeled outcomes name ``empty_label`` for a missed object).
    """
    labels = [lab for lab in observation if lab != ALARM_TAG]
    alarm = len(labels) != len(observation)
    if pedestrian in labels:
        return "ped", alarm
    if any(lab != empty_label for lab in labels):
        return "obs", alarm
    return "empty", alarm


def fail_safe(
    x: np.ndarray, v: np.ndarray, geometry: Geometry, action: FailSafe, emergency_deceleration: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The action taken on a monitor alarm: move ``min(x + v, N)`` and slow down.

    ``brake``: speed −1 per step (the seed paper's dynamics ``v' ∈ {v−1, v, v+1}``); ``stop_now``: the
    largest deceleration allowed, ``emergency_deceleration`` cells/step per step (``None``: stop within the
    step, ``v' = 0``). A stopped car stays where it is.
    """
    if action == "brake":
        dec: int = 1
    elif action == "stop_now":
        dec = geometry.max_speed if emergency_deceleration is None else int(emergency_deceleration)
    else:
        raise VerificationError(f"fail-safe action {action!r}: expected 'brake' or 'stop_now'")
    if dec < 1:
        raise VerificationError(f"emergency_deceleration must be >= 1, got {dec}")
    return np.minimum(x + v, geometry.road_cells), np.maximum(v - dec, 0)


def checked_successors(
    nx: object, nv: object, x: np.ndarray, v: np.ndarray, kind: str, geometry: Geometry, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a controller's answer: integer arrays of the input's shape, cells 1..N, speeds 0..V."""
    out = []
    for what, arr in (("x'", nx), ("v'", nv)):
        a = np.asarray(arr)
        if a.shape != x.shape:
            raise VerificationError(
                f"controller {name}: returned {what} of shape {a.shape} for kind {kind!r}; expected {x.shape} "
                "(one value per input state)"
            )
        integral = np.issubdtype(a.dtype, np.integer) or (
            np.issubdtype(a.dtype, np.floating) and bool(np.all(np.isfinite(a))) and bool(np.all(a == np.round(a)))
        )
        if a.size and not integral:
            raise VerificationError(f"controller {name}: returned non-integer {what} ({a.dtype}) for kind {kind!r}")
        out.append(a.astype(np.int64))
    ax, av = out
    bad = np.flatnonzero((ax < 1) | (ax > geometry.road_cells) | (av < 0) | (av > geometry.max_speed))
    if bad.size:
        i = int(bad[0])
        raise VerificationError(
            f"controller {name}: maps (x={int(x[i])}, v={int(v[i])}) under kind {kind!r} to "
            f"(x'={int(ax[i])}, v'={int(av[i])}), "
            f"outside cells 1..{geometry.road_cells} / speeds 0..{geometry.max_speed} ({bad.size} states affected)"
        )
    return ax, av
