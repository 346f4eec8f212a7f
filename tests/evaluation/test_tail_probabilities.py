"""`chi2_sf` and `student_t_sf` give scipy.stats' bits without importing scipy.stats (issue 27 target 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perception_safety.evaluation.tail_probabilities import chi2_sf, student_t_sf

EDGES = [0.0, -0.0, -1.0, 1e-300, 5e-324, 1e300, math.inf, -math.inf, math.nan]
DFS = [1, 2, 7, 19, 20, 1e6, 0.5, np.int64(3), 0, -1, math.nan, math.inf]


def _same(ours: float, ref: float) -> bool:
    ref = float(ref)
    if math.isnan(ref):
        return math.isnan(ours)
    return ours == ref and math.copysign(1.0, ours) == math.copysign(1.0, ref)


@pytest.mark.parametrize("df", DFS)
def test_equal_to_scipy_stats_bit_for_bit(df):
    rng = np.random.default_rng(7)
    xs = [*rng.exponential(8.0, 400), *rng.normal(0.0, 4.0, 400), *EDGES]
    assert all(_same(chi2_sf(x, df), stats.chi2.sf(x, df)) for x in xs)
    assert all(_same(student_t_sf(x, df), stats.t.sf(x, df)) for x in xs)


def test_textbook_quantiles():
    """Upper 5 % / 2.5 % points of the tables (chi2(1): 3.841458820694124; t(10): 2.228138851986274)."""
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-12)
    assert student_t_sf(2.228138851986274, 10) == pytest.approx(0.025, rel=1e-12)
    assert chi2_sf(0.0, 4) == 1.0 and student_t_sf(0.0, 4) == 0.5
    assert math.isnan(chi2_sf(1.0, 0)) and math.isnan(student_t_sf(math.nan, 3))
