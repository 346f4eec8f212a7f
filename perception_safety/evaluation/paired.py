"""Paired tests for two runs that judged the same objects (detector A vs B on the same inputs).

Two runs on the same frames are not independent samples: each object is judged by both, so the runs' intervals
overlap far more than their difference's interval would. With episodes (the independent unit), the difference of
the two ratio-of-sums rates gets a percentile interval from a paired bootstrap that resamples whole episodes with
replacement, the same draw for A and B (Efron & Tibshirani, ch. 13; cluster bootstrap). Without episode
information, McNemar's exact test needs the discordant pairs (objects found by one run only); from the totals
alone only the worst case is known, so the p-value is the largest over every discordant count the totals allow
(a valid, conservative test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom


@dataclass(frozen=True)
class PairedResult:
    """B - A with its interval (bootstrap) or p-value (McNemar), and whether it differs at the level."""

    method: str
    diff: float
    lower: float | None
    upper: float | None
    p_value: float | None
    significant: bool
    units: int
    """Episodes resampled (bootstrap) or objects (McNemar)."""


def paired_bootstrap(a_k: np.ndarray, a_n: np.ndarray, b_k: np.ndarray, b_n: np.ndarray, alpha: float = 0.05,
                     draws: int = 4000, seed: int = 0) -> PairedResult:
    """Percentile interval of ``sum(b_k)/sum(b_n) - sum(a_k)/sum(a_n)`` over episodes resampled jointly.

    The four arrays hold one entry per shared episode (same order). Draws whose resampled denominators are 0 are
    dropped; significant when the interval excludes 0.
    """
    a_k, a_n, b_k, b_n = (np.asarray(x, dtype=np.float64) for x in (a_k, a_n, b_k, b_n))
    e = len(a_k)
    if e == 0 or a_n.sum() == 0 or b_n.sum() == 0:
        raise ValueError("paired bootstrap: no episode with samples in both runs")
    diff = float(b_k.sum() / b_n.sum() - a_k.sum() / a_n.sum())
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, e, e), minlength=e) for _ in range(draws)])  # (draws, e)
    an, bn = counts @ a_n, counts @ b_n
    ok = (an > 0) & (bn > 0)
    d = (counts[ok] @ b_k) / bn[ok] - (counts[ok] @ a_k) / an[ok]
    lo, hi = (float(v) for v in np.quantile(d, [alpha / 2, 1 - alpha / 2]))
    return PairedResult("paired bootstrap over episodes", diff, lo, hi, None, lo > 0 or hi < 0, e)


def mcnemar_worst_case(k_a: int, k_b: int, n: int, alpha: float = 0.05) -> PairedResult:
    """McNemar's exact test of ``k_b/n - k_a/n`` when the discordant pairs are unknown: the largest two-sided
    p-value over every number of discordant objects ``m`` the totals allow (b + c = m, c - b = k_b - k_a)."""
    if n <= 0 or not (0 <= k_a <= n and 0 <= k_b <= n):
        raise ValueError(f"McNemar: counts must satisfy 0 <= k <= n, got {k_a}, {k_b}, {n}")
    d = k_b - k_a
    m_max = min(k_a, n - k_b) + min(k_b, n - k_a)  # b <= found by A and missed by B; c likewise
    ms = np.arange(abs(d), m_max + 1, 2)
    if ms.size == 0 or d == 0:
        p = 1.0
    else:
        low = (ms - abs(d)) // 2  # the smaller of b and c
        p = float(np.minimum(1.0, 2.0 * binom.cdf(low, ms, 0.5)).max())
    return PairedResult("McNemar exact, worst-case discordance", d / n, None, None, p, p < alpha, n)
