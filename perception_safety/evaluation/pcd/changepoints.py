"""Variance change points of the PCD paper (eq. 5–8): SIC likelihood-ratio test, binary segmentation.

For residuals ``r`` of one segment, ``l(tau) = tau log(S_tau / tau) + (n - tau) log((S - S_tau) / (n - tau))``
(eq. 6) is evaluated for every split from cumulative sums of ``r^2`` (O(n), no loop over tau);
``lambda_n = l(n) - min_tau l(tau)`` with ``l(n) = n log(S / n)``. Two statistics/critical values:

* ``"paper"``: Chen & Gupta's limit, the one eq. 8 is built on:
  ``a_n log(n) sqrt(lambda_n) - b_n log(n) > -log(-log(1 - alpha) / 2)`` with
  ``b_n = {2 log log n + 1/2 log log log n - log Gamma(1/2)} / log n``;
* ``"reference"``: the public reference implementation,
  ``a_n sqrt(log n) sqrt(lambda_n) - b_n' log(n) > -log(-log((1 - alpha) / 2))`` with ``log(pi)`` in
  place of ``log Gamma(1/2)`` in ``b_n'``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import gammaln

Rule = Literal["paper", "reference"]


@dataclass(frozen=True)
class SplitTest:
    """One application of the test to a segment of ``n`` points (indices relative to the segment)."""

    n: int
    tau: int  # size of the left part at the best split (left = [0, tau), right = [tau, n))
    l_min: float
    l_full: float
    lambda_n: float
    statistic: float
    critical: float

    @property
    def reject(self) -> bool:
        """True when H0 (one variance) is rejected (eq. 8)."""
        return self.statistic > self.critical


def critical_value(alpha: float, rule: Rule = "paper") -> float:
    """Right-hand side of eq. 8: ``-log(-log(1-alpha)/2)`` (paper) or ``-log(-log((1-alpha)/2))`` (reference)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if rule == "paper":
        return float(-np.log(-np.log1p(-alpha) / 2.0))
    return float(-np.log(-np.log((1.0 - alpha) / 2.0)))


def norming_constants(n: int, rule: Rule = "paper") -> tuple[float, float]:
    """``(a_n, b_n)`` of eq. 8; the reference rule uses ``log(pi)`` instead of ``log Gamma(1/2)``."""
    ln = np.log(n)
    lln = np.log(ln)
    a_n = np.sqrt(2.0 * lln) / ln
    shift = np.log(np.pi) if rule == "reference" else gammaln(0.5)
    b_n = (2.0 * lln + 0.5 * np.log(lln) - shift) / ln
    return float(a_n), float(b_n)


def split_likelihoods(resid: np.ndarray, var_floor: float = 0.0) -> np.ndarray:
    """``l(tau)`` of eq. 6 for left sizes ``tau = 1..n-1`` (entry ``tau - 1``), from prefix and suffix sums.

    Variances are floored at ``var_floor`` (> 0 keeps ``log`` finite on exactly fitted data).
    """
    sq = np.square(np.asarray(resid, dtype=float))
    return _likelihoods(sq, np.arange(1, sq.size, dtype=float), sq.size, var_floor)


def cell_squares(resid: np.ndarray, counts: np.ndarray, within: np.ndarray) -> np.ndarray:
    """Sum of squared residuals of each cell of ``counts`` samples whose mean misses the fit by ``resid`` and whose
    sum of squares about their mean is ``within``."""
    return counts * np.square(resid) + within


def _likelihoods(sq: np.ndarray, tau: np.ndarray, n: float, var_floor: float) -> np.ndarray:
    """``l`` at the boundaries after each entry but the last; ``sq`` the squared residual (sum) of each entry
    (a sample, or a cell of samples), ``tau`` the samples left of each boundary, ``n`` all samples."""
    left = np.cumsum(sq)[:-1]
    right = np.cumsum(sq[::-1])[::-1][1:]
    v_left = left / tau
    v_right = right / (n - tau)
    if var_floor > 0:
        v_left = np.maximum(v_left, var_floor)
        v_right = np.maximum(v_right, var_floor)
    with np.errstate(divide="ignore"):
        return tau * np.log(v_left) + (n - tau) * np.log(v_right)


def sic_split_test(
    resid: np.ndarray,
    alpha: float = 0.05,
    rule: Rule = "paper",
    candidates: np.ndarray | None = None,
    var_floor: float = 0.0,
    counts: np.ndarray | None = None,
    within: np.ndarray | None = None,
) -> SplitTest | None:
    """Eq. 6–8 on one segment; ``candidates`` (bool over tau = 1..n-1) restricts the admissible splits.

    ``counts``/``within``: the entries are cells of samples (`cell_squares`); splits fall between cells, ``n`` counts
    samples and the returned ``tau`` counts cells. Returns None when no split is admissible.
    """
    resid = np.asarray(resid, dtype=float)
    if counts is None:
        n = resid.size
        sq = np.square(resid)
        lik = split_likelihoods(resid, var_floor) if n >= 3 else None
    else:
        sq = cell_squares(resid, counts, within if within is not None else np.zeros(resid.size))
        n = round(float(counts.sum()))
        lik = _likelihoods(sq, np.cumsum(counts)[:-1], n, var_floor) if n >= 3 and resid.size >= 2 else None
    if lik is None:
        return None
    if candidates is not None:
        lik = np.where(candidates, lik, np.inf)
    if not np.any(np.isfinite(lik) | (lik == -np.inf)):
        return None
    idx = int(np.argmin(lik))
    if lik[idx] == np.inf:
        return None
    l_min = float(lik[idx])
    total = float(np.sum(sq))
    v_full = max(total / n, var_floor) if var_floor > 0 else total / n
    with np.errstate(divide="ignore"):
        l_full = float(n * np.log(v_full))
    lam = max(l_full - l_min, 0.0) if np.isfinite(l_min) else np.inf
    a_n, b_n = norming_constants(n, rule)
    ln = np.log(n)
    # paper: a(log n) sqrt(lambda_n) - b(log n); reference: a_n sqrt(log n) sqrt(lambda_n) - b_n' log n
    scale = ln if rule == "paper" else np.sqrt(ln)
    stat = a_n * scale * np.sqrt(lam) - b_n * ln
    return SplitTest(n, idx + 1, l_min, l_full, float(lam), float(stat), critical_value(alpha, rule))


@dataclass(frozen=True)
class ChangePoints:
    """Binary segmentation result: split indices into the sorted data and the reported distances."""

    split_indices: tuple[int, ...]  # first index of each right part, ascending
    distances: tuple[float, ...]  # reported change-point distances, ascending
    tests: tuple[tuple[int, int, SplitTest], ...]  # (segment lo, segment hi, test) for every tested segment


#: Fits the mean on ``x[lo:hi], y[lo:hi]`` and returns the residuals ``y - f(x)``.
ResidualFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def binary_segmentation(
    x: np.ndarray,
    y: np.ndarray,
    residuals: ResidualFn,
    alpha: float = 0.05,
    rule: Rule = "paper",
    min_segment_size: int = 30,
    min_side: int = 2,
    exact_fit_tol: float = 1e-10,
    counts: np.ndarray | None = None,
    within: np.ndarray | None = None,
    y_scale: float | None = None,
) -> ChangePoints:
    """Apply the test recursively until no segment rejects H0 (Section 4.2).

    ``paper``: splits only between distinct distances with at least ``min_side`` points per side; the change
    point is the last distance of the left part (``x_tau``). ``reference``: any split with a non-empty left
    part and two points on the right, the data split at the first sample with the right part's first distance,
    which is the reported change point. Segments shorter than ``min_segment_size`` are not tested; segments
    whose mean fit leaves residuals below ``exact_fit_tol * max(1, max|y|)`` (constant or exactly fitted
    data), or whose samples all share one distance, are not tested either.

    Cells (the bootstrap's resamples, paper rule only): entry ``i`` holds ``counts[i]`` samples at distance ``x[i]``
    (distinct, ascending) with mean ``y[i]`` and sum of squares ``within[i]`` about it; ``residuals(xs, ys, counts)``
    fits the cells' samples; ``y_scale`` is the samples' largest ``|y|``. Sizes count samples, splits fall between
    cells: the same test as on the samples themselves.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n_all = x.size
    if counts is not None and rule != "paper":
        raise ValueError("binary segmentation of cells follows the paper rule only")
    cum = None if counts is None else np.concatenate([[0.0], np.cumsum(counts)])
    splits: list[int] = []
    values: list[float] = []
    tests: list[tuple[int, int, SplitTest]] = []
    top = y_scale if y_scale is not None else float(np.max(np.abs(y))) if n_all else 0.0
    scale = max(1.0, top)
    floor = (exact_fit_tol * scale) ** 2
    stack = [(0, n_all)]
    while stack:
        lo, hi = stack.pop()
        n = hi - lo if cum is None else cum[hi] - cum[lo]
        if n < max(min_segment_size, 3):
            continue
        xs, ys = x[lo:hi], y[lo:hi]
        if xs[0] == xs[-1]:
            continue  # one distance only: no mean over distance to fit, no split between distinct distances
        if counts is None:
            resid = residuals(xs, ys)
            mean_sq = float(np.mean(np.square(resid)))
        else:
            cs, ws = counts[lo:hi], within[lo:hi] if within is not None else np.zeros(hi - lo)
            resid = residuals(xs, ys, cs)
            mean_sq = float(np.sum(cell_squares(resid, cs, ws))) / n
        if mean_sq <= floor:
            continue
        if counts is not None:
            tau = cum[lo + 1 : hi] - cum[lo]
            cand = (tau >= min_side) & (n - tau >= min_side)
            result = sic_split_test(resid, alpha, rule, cand, var_floor=floor, counts=cs, within=ws)
        elif rule == "paper":
            tau = np.arange(1, n)
            cand = (tau >= min_side) & (n - tau >= min_side) & (xs[1:] > xs[:-1])
            result = sic_split_test(resid, alpha, rule, cand, var_floor=floor)
        else:
            cand = np.arange(1, n) <= n - 2
            result = sic_split_test(resid, alpha, rule, cand, var_floor=0.0)
        if result is None:
            continue
        tests.append((lo, hi, result))
        if not result.reject:
            continue
        if rule == "paper":
            cut = lo + result.tau
            splits.append(cut)
            values.append(float(x[cut - 1]))
        else:
            value = float(xs[result.tau])
            cut = lo + int(np.searchsorted(xs, value, side="left"))
            values.append(value)
            if cut <= lo or cut >= hi - 1:
                continue
            splits.append(cut)
        stack.append((cut, hi))
        stack.append((lo, cut))
    order = np.argsort(values, kind="stable")
    uniq_vals = sorted(set(values))
    return ChangePoints(
        split_indices=tuple(sorted(set(splits))),
        distances=tuple(float(v) for v in uniq_vals) if rule == "reference" else tuple(values[i] for i in order),
        tests=tuple(tests),
    )
