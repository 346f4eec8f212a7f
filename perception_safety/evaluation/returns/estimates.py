"""SG, RH and AC from samples of safety/mission returns (SG/RH/AC paper, eq. 7-9) and the classification form
of the returns (eq. 10-13): per sample an error/threat label tau and the monitor's alarm."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.evaluation.returns.config import ReturnsError


@dataclass(frozen=True)
class Returns:
    """Per-sample safety (S) and mission (M) returns of f, (f, m_f) and f*; all arrays of one length n."""

    safety_f: np.ndarray
    safety_fm: np.ndarray
    safety_gt: np.ndarray
    mission_f: np.ndarray
    mission_fm: np.ndarray
    mission_gt: np.ndarray

    def __post_init__(self) -> None:
        n = {a.shape for a in self.arrays()}
        if len(n) != 1 or len(next(iter(n))) != 1:
            raise ReturnsError(f"returns: the six return arrays must be 1-D of equal length, got shapes {sorted(n)}")

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.safety_f, self.safety_fm, self.safety_gt, self.mission_f, self.mission_fm, self.mission_gt)

    def __len__(self) -> int:
        return int(self.safety_f.shape[0])

    @staticmethod
    def concatenate(parts: Sequence[Returns]) -> Returns:
        if not parts:
            return Returns(*(np.zeros(0) for _ in range(6)))
        cols = list(zip(*(p.arrays() for p in parts), strict=True))
        return Returns(*(np.concatenate(c).astype(np.float64) for c in cols))


@dataclass(frozen=True)
class SafetyMetrics:
    """SG, RH, AC (eq. 7-9), the hazard of f (SG + RH, eq. 6) and the number of samples averaged."""

    sg: float
    rh: float
    ac: float
    hazard_f: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"SG": self.sg, "RH": self.rh, "AC": self.ac, "hazard_f": self.hazard_f, "n": self.n}


def safety_metrics(r: Returns) -> SafetyMetrics:
    """Eq. 7-9: sample means of S_fm - S_f, S_f* - S_fm and M_f - M_fm."""
    n = len(r)
    if n == 0:
        raise ReturnsError("returns: no samples to average")
    sg = float(np.mean(r.safety_fm - r.safety_f))
    rh = float(np.mean(r.safety_gt - r.safety_fm))
    ac = float(np.mean(r.mission_f - r.mission_fm))
    hazard = float(np.mean(r.safety_gt - r.safety_f))
    return SafetyMetrics(sg, rh, ac, hazard, n)


def mean_metrics(per_group: Sequence[SafetyMetrics]) -> SafetyMetrics:
    """Unweighted mean of per-group metrics (per-episode averaging); ``n`` is the number of groups."""
    if not per_group:
        raise ReturnsError("returns: no episodes to average")
    a = np.array([[m.sg, m.rh, m.ac, m.hazard_f] for m in per_group], dtype=np.float64).mean(axis=0)
    return SafetyMetrics(float(a[0]), float(a[1]), float(a[2]), float(a[3]), len(per_group))


# ---------------------------------------------------------------- eq. 10-15 (classification form, E1)


@dataclass(frozen=True)
class BinaryCounts:
    """The monitor as a binary detector of tau: TP = alarm on error, FN = missed error, FP = false alarm."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def as_dict(self) -> dict[str, int]:
        return {"TP": self.tp, "FP": self.fp, "FN": self.fn, "TN": self.tn}


def _bool_array(values: Iterable[bool] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ReturnsError(f"returns: {what} must be a 1-D sequence of booleans")
    if arr.dtype != bool:
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ReturnsError(f"returns: {what} must contain only 0/1 or booleans")
        arr = arr.astype(bool)
    return arr


def classification_returns(tau: Iterable[bool] | np.ndarray, alarm: Iterable[bool] | np.ndarray) -> Returns:
    """Eq. 10-13 (and 14-15): S_fm = 0 iff tau and no alarm, M_fm = 0 iff alarm without tau.

    The unmonitored f is the null monitor (never alarms): S_f = 1 - tau, M_f = 1; f* never errs: S = M = 1.
    """
    t = _bool_array(tau, "tau")
    a = _bool_array(alarm, "alarm")
    if t.shape != a.shape:
        raise ReturnsError(f"returns: tau has {t.size} samples but alarm has {a.size}")
    one = np.ones(t.size)
    return Returns(
        safety_f=(~t).astype(np.float64),
        safety_fm=(~(t & ~a)).astype(np.float64),
        safety_gt=one,
        mission_f=one.copy(),
        mission_fm=(~(~t & a)).astype(np.float64),
        mission_gt=one.copy(),
    )


def binary_counts(tau: Iterable[bool] | np.ndarray, alarm: Iterable[bool] | np.ndarray) -> BinaryCounts:
    """Confusion counts of the monitor as a detector of tau."""
    t = _bool_array(tau, "tau")
    a = _bool_array(alarm, "alarm")
    return BinaryCounts(int(np.sum(t & a)), int(np.sum(~t & a)), int(np.sum(t & ~a)), int(np.sum(~t & ~a)))
