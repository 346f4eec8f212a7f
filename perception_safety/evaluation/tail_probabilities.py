"""Survival functions of chi-squared and Student's t, computed as `scipy.stats` computes them, from `scipy.special`.

`scipy.stats` costs ~0.25 CPU s to import, paid by every `evaluate` that fits a PCD or tests the chain's
independence for one tail probability each; these give the same bits (the same special function on the same
argument, with `scipy.stats`' rules for the support's ends, NaN and a degrees of freedom that is not positive).
"""

from __future__ import annotations

import math

from scipy.special import chdtrc, stdtr


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for X ~ chi2(df): ``scipy.stats.chi2.sf(x, df)``."""
    if math.isnan(x) or not df > 0:
        return math.nan
    if x <= 0:  # the support's lower end
        return 1.0
    if math.isinf(x):
        return 0.0
    return float(chdtrc(df, x))


def student_t_sf(x: float, df: float) -> float:
    """P(T > x) for T ~ Student's t(df): ``scipy.stats.t.sf(x, df)``."""
    if math.isnan(x) or not df > 0:
        return math.nan
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    return float(stdtr(df, -x))
