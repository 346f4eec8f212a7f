"""Does a verified confusion model still hold on new data? A cluster-aware two-sample test per confusion column.

For every column (distance bin, true class) with samples in both the model's data (old) and the new data, the
detection rate ``p = P(pred = true | true)`` is compared with episodes as the independent unit: each side's
variance is the cluster-robust (linearisation) variance of its ratio estimate, floored at the binomial variance
(a design effect below 1 is never assumed), the statistic ``(p_new - p_old) / sqrt(v_old + v_new)`` is referred
to Student's t with ``min(k_old, k_new) - 1`` degrees of freedom (few clusters: conservative), and the columns'
p-values are adjusted by Holm's step-down method (the family-wise error rate over all columns is ``alpha``).

"Accepted" does not prove the model holds: each column also reports the smallest shift the data could detect
(``min_detectable_shift``: power 0.8 at the Bonferroni level, same variances), so a team sees how large a
degradation could hide in the noise. (Interval-model validation in the spirit of Peper et al. 2025.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from perception_safety.evaluation.clustered import clustered_proportion

POWER = 0.8


@dataclass(frozen=True)
class ColumnShift:
    """One column's comparison (rates with their cluster-aware intervals, the test, the detectable shift)."""

    bin: str
    true_label: str
    old_rate: float
    old_interval: tuple[float, float]
    old_trials: int
    old_clusters: int
    new_rate: float
    new_interval: tuple[float, float]
    new_trials: int
    new_clusters: int
    statistic: float
    p_value: float
    standard_error: float
    degrees_of_freedom: int
    p_adjusted: float = 1.0
    rejected: bool = False
    min_detectable_shift: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _robust_variance(y: np.ndarray, m: np.ndarray) -> tuple[float, float, int]:
    """``(p, v, k)``: ratio estimate, its cluster-robust variance floored at the binomial one, clusters."""
    n, k = float(m.sum()), int((m > 0).sum())
    p = float(y.sum()) / n
    v = (k / max(k - 1, 1)) * float(((y - p * m) ** 2).sum()) / n**2 if k > 1 else np.inf
    return p, max(v, p * (1.0 - p) / n), k


def column_test(bin_name: str, label: str, old: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray],
                alpha: float) -> ColumnShift:
    """Compare one column: ``old``/``new`` are per-cluster (hits, trials) arrays."""
    (yo, mo), (yn, mn) = (tuple(np.asarray(a, dtype=np.float64) for a in side) for side in (old, new))
    po, vo, ko = _robust_variance(yo, mo)
    pn, vn, kn = _robust_variance(yn, mn)
    pooled = float(yo.sum() + yn.sum()) / float(mo.sum() + mn.sum())
    floor = pooled * (1 - pooled) * (1 / mo.sum() + 1 / mn.sum())
    var = max(vo + vn, floor)
    df = max(min(ko, kn) - 1, 1)
    if var <= 0:  # both sides all hits (or all misses) at the same rate: no evidence of a shift
        stat, p_value = 0.0, 1.0 if po == pn else 0.0
    else:
        stat = (pn - po) / np.sqrt(var)
        p_value = float(2 * student_t.sf(abs(stat), df)) if np.isfinite(stat) else 1.0
    ci_o = clustered_proportion(yo.astype(np.int64), mo.astype(np.int64), alpha)
    ci_n = clustered_proportion(yn.astype(np.int64), mn.astype(np.int64), alpha)
    return ColumnShift(bin_name, label, po, (ci_o.lower, ci_o.upper), int(mo.sum()), ko, pn, (ci_n.lower, ci_n.upper),
                       int(mn.sum()), kn, float(stat), p_value, float(np.sqrt(var)), df)


def holm(results: Sequence[ColumnShift], alpha: float) -> list[ColumnShift]:
    """Holm's step-down adjustment; each column's adjusted p-value, rejection and detectable shift."""
    m = len(results)
    order = sorted(range(m), key=lambda i: results[i].p_value)
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * results[i].p_value))
        adjusted[i] = running
    out = []
    for i, r in enumerate(results):
        df = r.degrees_of_freedom
        crit = student_t.ppf(1 - alpha / (2 * m), df) + student_t.ppf(POWER, df)
        # none without a spread estimate: one episode (infinite) or every look a hit or a miss on both sides (0)
        se = r.standard_error
        mds = float(min(crit * se, 1.0)) if np.isfinite(se) and se > 0 else None
        out.append(ColumnShift(**{**asdict(r), "p_adjusted": adjusted[i], "rejected": adjusted[i] < alpha,
                                  "min_detectable_shift": mds}))
    return out


def column_shifts(old_cm: np.ndarray, new_cm: np.ndarray, labels: Sequence[str], bin_names: Sequence[str],
                  alpha: float = 0.05, only: set[str] | None = None) -> list[ColumnShift]:
    """Every column with trials on both sides (of the true labels in ``only``, when given), Holm-adjusted.
    ``*_cm`` are per-cluster class-labeled counts ``[cluster, bin, pred, true]`` (one cluster without episodes)."""
    old_cm, new_cm = np.asarray(old_cm), np.asarray(new_cm)
    tests = []
    for b, name in enumerate(bin_names):
        for j, label in enumerate(labels):
            if only is not None and label not in only:
                continue
            mo, mn = old_cm[:, b, :, j].sum(axis=1), new_cm[:, b, :, j].sum(axis=1)
            if mo.sum() == 0 or mn.sum() == 0:
                continue
            tests.append(column_test(name, label, (old_cm[:, b, j, j], mo), (new_cm[:, b, j, j], mn), alpha))
    return holm(tests, alpha) if tests else []
