"""Clopper-Pearson bounds checked against their defining tail equations (scipy.stats.binom, independent)."""

import numpy as np
import pytest
from scipy.stats import binom

from perception_safety.evaluation.intervals import bonferroni, clopper_pearson


@pytest.mark.parametrize(("k", "n"), [(31, 158), (1, 9), (5, 9), (711, 8622), (3, 3), (0, 12)])
def test_bounds_solve_the_binomial_tail_equations(k, n):
    alpha = 0.05
    lo, hi = clopper_pearson(k, n, alpha)
    if k > 0:
        assert binom.sf(k - 1, n, float(lo)) == pytest.approx(alpha / 2, abs=1e-9)  # P(X >= k | lo)
    else:
        assert lo == 0.0
    if k < n:
        assert binom.cdf(k, n, float(hi)) == pytest.approx(alpha / 2, abs=1e-9)  # P(X <= k | hi)
    else:
        assert hi == 1.0
    assert lo <= k / n <= hi


def test_vectorised_and_vacuous_for_no_samples():
    lo, hi = clopper_pearson(np.array([0, 2, 0]), np.array([0, 4, 5]))
    assert lo[0] == 0.0 and hi[0] == 1.0
    assert lo[1] < 0.5 < hi[1]
    assert lo[2] == 0.0 and 0 < hi[2] < 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        clopper_pearson(1, 2, 0.0)
    with pytest.raises(ValueError, match="counts"):
        clopper_pearson(3, 2)
    with pytest.raises(ValueError, match="at least 1"):
        bonferroni(0.05, 0)
    assert bonferroni(0.05, 3) == pytest.approx(0.05 / 3)


def test_clopper_pearson_is_scipy_stats_beta_quantiles_bit_for_bit():
    """The quantiles come from scipy.special.betaincinv: the same numbers as scipy.stats.beta.ppf, on integer and
    fractional (effective) counts, both ends, at Bonferroni-small alphas, with the k = 0 / k = n / n = 0 cases."""
    from scipy.stats import beta

    rng = np.random.default_rng(11)
    n = np.concatenate([rng.integers(0, 3000, 4000).astype(float), rng.uniform(0, 800, 4000), [0.0, 1.0, 5.0]])
    k = np.concatenate([np.floor(rng.uniform(0, 1, 8000) * (n[:8000] + 1)).clip(0, n[:8000]), [0.0, 1.0, 5.0]])
    k[::7] = n[::7]
    for alpha in (0.05, 0.05 / 720, 0.3):
        lo, hi = clopper_pearson(k, n, alpha)
        with np.errstate(invalid="ignore", divide="ignore"):
            ref_lo = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
            ref_hi = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
        assert lo.tobytes() == ref_lo.tobytes() and hi.tobytes() == ref_hi.tobytes()
