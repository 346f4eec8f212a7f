"""Variance change points (PCD paper eq. 5–8): likelihoods, critical values, detection and false positives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.evaluation.pcd.changepoints import (
    binary_segmentation,
    critical_value,
    norming_constants,
    sic_split_test,
    split_likelihoods,
)
from perception_safety.evaluation.pcd.pspline import fit_pspline, fitted_values


def spline_residuals(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    return ys - fitted_values(fit_pspline(xs, ys), xs)


def test_split_likelihoods_equal_direct_sums():
    rng = np.random.default_rng(1)
    r = rng.normal(0, 1, 57) * np.linspace(0.5, 2, 57)
    got = split_likelihoods(r)
    n = r.size
    expect = [
        t * math.log(sum(v * v for v in r[:t]) / t) + (n - t) * math.log(sum(v * v for v in r[t:]) / (n - t))
        for t in range(1, n)
    ]
    np.testing.assert_allclose(got, expect, rtol=1e-12)


def test_critical_values_follow_both_formulas():
    # paper eq. 8: -log(-log(1 - alpha) / 2); reference code: -log(-log((1 - alpha) / 2))
    assert critical_value(0.05, "paper") == pytest.approx(-math.log(-math.log(0.95) / 2), rel=1e-14)
    assert critical_value(0.05, "paper") == pytest.approx(3.663342429602109, rel=1e-12)
    assert critical_value(0.05, "reference") == pytest.approx(0.2951223831135952, rel=1e-12)
    with pytest.raises(ValueError):
        critical_value(1.5)


def test_norming_constants():
    n = 600
    ln, lln = math.log(n), math.log(math.log(n))
    a, b = norming_constants(n, "paper")
    assert a == pytest.approx(math.sqrt(2 * lln) / ln)
    assert b == pytest.approx((2 * lln + 0.5 * math.log(lln) - math.log(math.gamma(0.5))) / ln)
    _, b_ref = norming_constants(n, "reference")
    assert b_ref == pytest.approx((2 * lln + 0.5 * math.log(lln) - math.log(math.pi)) / ln)


def test_single_test_picks_the_true_split_and_rejects():
    rng = np.random.default_rng(5)
    r = np.r_[rng.normal(0, 0.02, 120), rng.normal(0, 0.15, 180)]
    result = sic_split_test(r, 0.05, "paper")
    assert abs(result.tau - 120) <= 3
    assert result.reject
    assert result.lambda_n == pytest.approx(result.l_full - result.l_min)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_paper_mode_finds_variance_jump_at_40m(seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 100, 500))
    sigma = np.where(x < 40, 0.02, 0.15)
    y = 0.9 - 0.004 * x + rng.normal(0, 1, x.size) * sigma
    cps = binary_segmentation(x, y, spline_residuals, alpha=0.05, rule="paper", min_segment_size=30)
    assert len(cps.distances) >= 1
    true_index = int(np.searchsorted(x, 40.0))  # first sample of the noisy part
    nearest = min(cps.split_indices, key=lambda s: abs(s - true_index))
    assert abs(nearest - true_index) <= 5
    # the reported change point is the last distance of the quiet part
    assert x[nearest - 1] in cps.distances


def test_paper_mode_false_positive_rate_on_homoscedastic_data():
    alpha, runs, hits = 0.05, 300, 0
    for seed in range(runs):
        rng = np.random.default_rng(1000 + seed)
        x = np.sort(rng.uniform(0, 100, 300))
        y = 0.8 - 0.005 * x + rng.normal(0, 0.05, x.size)
        cps = binary_segmentation(x, y, spline_residuals, alpha=alpha, rule="paper", min_segment_size=30)
        hits += bool(cps.distances)
    rate = hits / runs
    # near or below alpha: a binomial 3-sigma band above alpha
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs)


def test_constant_data_is_not_tested():
    x = np.linspace(0, 50, 200)
    y = np.full(x.size, 0.7)
    cps = binary_segmentation(x, y, spline_residuals, rule="paper")
    assert cps.distances == () and cps.tests == ()


def test_duplicate_distances_never_split_between_equal_x():
    rng = np.random.default_rng(9)
    x = np.repeat(np.arange(0.0, 100.0, 1.0), 4)
    y = 0.8 - 0.004 * x + rng.normal(0, 1, x.size) * np.where(x < 50, 0.02, 0.2)
    cps = binary_segmentation(x, y, spline_residuals, rule="paper")
    assert cps.split_indices
    for s in cps.split_indices:
        assert x[s - 1] < x[s]


def test_reference_rule_splits_at_first_sample_of_a_repeated_distance():
    # residuals are given directly: quiet then noisy, with the noisy part starting inside a run of equal x
    rng = np.random.default_rng(2)
    x = np.r_[np.arange(150.0), np.full(5, 150.0), np.arange(151.0, 300.0)]
    r = np.r_[rng.normal(0, 0.01, 152), rng.normal(0, 0.3, x.size - 152)]

    def given(xs, ys):
        return ys

    cps = binary_segmentation(x, r, given, rule="reference", min_segment_size=130)
    assert 150.0 in cps.distances
    assert 150 in cps.split_indices  # first index with x == 150
