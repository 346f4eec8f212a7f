"""Warnings of the PCD estimate (issue 15 items 3-4): minimum segment length, mean fit, jumping grid cells."""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.pcd.compute import PCDConfig, compute_pcd
from perception_safety.evaluation.pcd.diagnostics import grid_jumps, mean_fit_check


def test_every_split_leaves_at_least_min_side_samples():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 100, 600))
    # a burst of huge residuals at the far end: the old rule (min_side 2) split off a tiny segment
    y = 0.8 - 0.003 * x + rng.normal(0, 0.02, 600)
    y[-8:] += rng.normal(0, 0.5, 8)
    for min_side in (None, 50):
        res = compute_pcd(x, y, PCDConfig(min_side=min_side))
        floor = 30 if min_side is None else 50
        assert all(s.n >= floor for s in res.segments)
    old = compute_pcd(x, y, PCDConfig(min_side=2))
    assert min(s.n for s in old.segments) < 30


def test_small_segment_is_warned():
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 100, 400))
    y = 0.8 - 0.003 * x + rng.normal(0, 1, 400) * np.where(x > 91, 0.2, 0.02)
    res = compute_pcd(x, y, PCDConfig(min_side=30))
    assert res.change_points.distances
    small = [s for s in res.segments if s.n < 45]
    assert small
    assert any(w.code == "pcd_small_segment" and f"n = {small[0].n}" in w.message for w in res.warnings)


def test_poor_mean_fit_is_warned_and_a_good_one_is_not():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 100, 1000))
    wiggle = 0.6 + 0.2 * np.sin(x / 3.0)  # far too wiggly for K = 10
    bad = compute_pcd(x, wiggle + rng.normal(0, 0.03, x.size))
    assert any(w.code == "pcd_mean_fit" for w in bad.warnings)
    good = compute_pcd(x, 0.9 - 0.004 * x + rng.normal(0, 0.03, x.size))
    assert not any(w.code == "pcd_mean_fit" for w in good.warnings)
    assert good.fit_check is not None and good.fit_check.p_value > 0.001


def test_mean_fit_check_statistic():
    # two bins with residual sums 2 and -2, variance 1 per sample, 4 samples per bin: chi2 = 4/4 + 4/4 = 2
    r = np.array([0.5, 0.5, 0.5, 0.5, -0.5, -0.5, -0.5, -0.5])
    fc = mean_fit_check(np.arange(8.0), r, np.ones(8), min_bin=4)
    assert fc.df == 2 and fc.chi2 == 2.0
    assert abs(fc.p_value - np.exp(-1.0)) < 1e-12  # chi2(2) survival = exp(-x/2)


def test_grid_jumps_detects_cells_pinned_at_a_change_point_and_isolated_stretches():
    x = np.arange(10.0)
    prob = np.array(
        [[0.9, 0.9, 0.9, 0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2], [0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.9, 0.2]]
    )
    seg = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    pcd = np.array([[4.0], [8.0]])
    at_cp, far = grid_jumps(x, prob, np.array([0.5]), seg, pcd, gap_m=3.0)
    assert at_cp[:, 0].tolist() == [True, False]
    assert far[:, 0].tolist() == [False, True]
