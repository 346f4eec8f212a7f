"""Exact binomial confidence intervals for estimated proportions (recall, P(pred | true), ...).

Shared by the confusion metrics and the interval Markov chain so that both quote the same interval.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaincinv


def clopper_pearson(k: ArrayLike, n: ArrayLike, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson interval at level 1 - alpha for ``k`` successes of ``n`` (vectorised).

    Lower = Beta(alpha/2; k, n-k+1) quantile (0 when k = 0), upper = Beta(1-alpha/2; k+1, n-k) (1 when k = n);
    n = 0 gives the vacuous [0, 1]. The quantiles come straight from ``scipy.special.betaincinv``, the function
    behind ``scipy.stats.beta.ppf`` (same values, without its ~0.1 ms of argument handling per call).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts must satisfy 0 <= k <= n")
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, betaincinv(k, n - k + 1, alpha / 2), 0.0)
        hi = np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def bonferroni(alpha: float, m: int) -> float:
    """Per-comparison level alpha / m, so that m simultaneous intervals hold jointly at 1 - alpha."""
    if m < 1:
        raise ValueError(f"number of comparisons must be at least 1, got {m}")
    return alpha / m
