"""All resamples' PCD estimates at once (`resample_batch`) against the per-resample estimate on the cells
(`cells.cell_estimate`, itself tested against the estimate rerun on each resample's samples in test_bootstrap.py),
resample by resample, on the same draws: random data with ties, empty cells, a resample of one unit, all detected,
all missed; and the pieces (normal equations, the largest distance above a threshold) against direct computations.
"""

from __future__ import annotations

from functools import partial
from unittest import mock

import numpy as np
import pytest
from scipy.interpolate import BSpline

from perception_safety.evaluation.pcd import bootstrap as boot_module
from perception_safety.evaluation.pcd.bootstrap import _resample_cells, bootstrap_pcd
from perception_safety.evaluation.pcd.cells import cell_estimate, cell_table
from perception_safety.evaluation.pcd.compute import PCDConfig, PCDError, compute_pcd
from perception_safety.evaluation.pcd.grid import pcd_from_probabilities
from perception_safety.evaluation.pcd.pspline import uniform_knots
from perception_safety.evaluation.pcd.resample_batch import (
    basis_rows,
    estimate_resamples,
    largest_distances,
    normal_equations,
)
from perception_safety.evaluation.pcd.synthetic import hurdle_samples


def _draws(k: int, n_boot: int, seed: int, one_unit: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    draws = np.stack([np.bincount(rng.integers(0, k, k), minlength=k) for _ in range(n_boot)])
    if one_unit:  # a resample that drew one unit k times, and one that drew two units only
        draws[0] = 0
        draws[0, 1] = k
        draws[1] = 0
        draws[1, [0, 2]] = [k - 1, 1]
    return draws


def _both(x, y, g, cfg: PCDConfig, n_boot: int = 60, seed: int = 0):
    """Per resample: (cell_estimate's, the batch's) (PCD, grid), None where it fails."""
    res = compute_pcd(x, y, cfg)
    fixed = cfg.model_copy(update={"model": res.model})
    _, unit = np.unique(g, return_inverse=True)
    order = np.argsort(unit, kind="stable")
    k = int(unit.max()) + 1
    table = cell_table(x[order], y[order], unit[order], k)
    draws = _draws(k, n_boot, seed)
    stats, drawn = table.resample(draws), draws > 0
    start = res.logistic.coef if res.logistic is not None else None
    one = []
    for r in range(n_boot):
        scale = table.y_scale[:, drawn[r]].max(axis=1)
        try:
            one.append(cell_estimate(table, stats[r], (float(scale[0]), float(scale[1])), fixed, fixed.model, start))
        except PCDError:
            one.append(None)
    y_scale = np.where(drawn[:, None, :], table.y_scale[None], 0.0).max(axis=2)
    return one, estimate_resamples(table, stats, y_scale, fixed, fixed.model, start), res


def _assert_same(one, batch) -> int:
    assert [e is None for e in one] == [e is None for e in batch]
    for a, b in zip(one, batch, strict=True):
        if a is not None:
            assert a[0] == b[0]
            np.testing.assert_array_equal(a[1], b[1])
    return sum(e is not None for e in one)


CASES = [
    {"model": "hurdle"},
    {"model": "gaussian"},
    {"model": "hurdle", "min_side": 5, "alpha": 0.3},  # many change points: deep segmentation
    {"model": "gaussian", "min_side": 3, "min_segment_size": 6, "alpha": 0.5},
    {"model": "hurdle", "spline_degree": 2, "n_splines": 8, "penalty_order": 1, "lam": 3.0},
]


@pytest.mark.parametrize("settings", CASES)
def test_batch_equals_the_per_resample_estimate(settings):
    for seed in range(3):
        x, y, g = hurdle_samples(900, seed, tracks=20)
        x = np.round(x, 0 if seed == 1 else 6)  # seed 1: ~200 distinct distances, many samples per cell
        one, batch, _ = _both(x, y, g, PCDConfig(**settings), seed=seed)
        assert _assert_same(one, batch) >= 50


def test_all_detected_all_missed_and_constant_scores():
    x, y, g = hurdle_samples(600, 4, tracks=15)
    rng = np.random.default_rng(4)
    cases = {
        "all detected (hurdle falls back to Gaussian per resample)": np.clip(y, 0.05, None),
        "all missed": np.zeros_like(y),
        "constant": np.full_like(y, 0.73),
        "misses in one track only": np.where(g == g[0], 0.0, np.clip(y, 0.05, None)),
        "steps": np.where(x < 60, 0.9, 0.2) + rng.normal(0, 0.01, x.size) * (x > 60),
    }
    for y_case in cases.values():
        for model in ("hurdle", "gaussian"):
            one, batch, _ = _both(x, y_case, g, PCDConfig(model=model), n_boot=30)
            _assert_same(one, batch)


def test_constant_scores_on_a_grid_threshold_differ_only_there():
    """All scores 0.7 and the grid's y_t = 0.7: P(y > 0.7) compares a fitted 0.7 +- 1e-16 with sigma ~1e-17, so
    either order of the normal equations' sums decides it by rounding (the per-resample path's value is BLAS's
    order); every other grid row and PCD itself agree."""
    x, y, g = hurdle_samples(600, 4, tracks=15)
    one, batch, _ = _both(x, np.full_like(y, 0.7), g, PCDConfig(model="gaussian"), n_boot=30)
    row = PCDConfig().grid_y_t.index(0.7)
    for a, b in zip(one, batch, strict=True):
        assert a[0] == b[0]
        np.testing.assert_array_equal(np.delete(a[1], row, axis=0), np.delete(b[1], row, axis=0))


def test_too_few_samples_and_one_distance_fail_in_both():
    rng = np.random.default_rng(2)
    g = np.arange(240) % 12
    x = rng.uniform(5, 150, 12)[g]  # each track at one distance: a resample of one track has one distance
    y = np.where(rng.random(240) < 0.8, rng.uniform(0.2, 0.9, 240), 0.0)
    one, batch, _ = _both(x, y, g, PCDConfig(model="hurdle"), n_boot=40)
    _assert_same(one, batch)
    assert one[0] is None  # one unit drawn
    g = np.repeat(np.arange(12), [20, 2] + [20] * 10)  # track 1: two samples at two distances
    x = rng.uniform(5, 150, g.size)
    y = np.where(rng.random(g.size) < 0.8, rng.uniform(0.2, 0.9, g.size), 0.0)
    one, batch, _ = _both(x, y, g, PCDConfig(model="hurdle", n_splines=30), n_boot=40)
    _assert_same(one, batch)
    assert one[0] is None and one[2] is not None  # track 1 drawn 12 times: 24 samples < 30 spline functions


def test_bootstrap_interval_is_the_same_batched_or_not():
    x, y, g = hurdle_samples(2000, 1, tracks=40)
    cfg = PCDConfig(model="hurdle", bootstrap={"n_boot": 50, "seed": 2})
    res = compute_pcd(x, y, cfg)
    _, unit = np.unique(g, return_inverse=True)
    order = np.argsort(unit, kind="stable")
    k = int(unit.max()) + 1
    rng = np.random.default_rng(2)
    picks = [rng.integers(0, k, k) for _ in range(50)]
    fixed = cfg.model_copy(update={"model": res.model})
    args = (x[order], y[order], unit[order], k, picks, fixed, res.logistic.coef)
    pcds, grids, _ = _resample_cells(*args)
    pcds_1, grids_1, _ = _resample_cells(*args, batched=False)
    assert pcds == pcds_1
    np.testing.assert_array_equal(np.stack(grids), np.stack(grids_1))
    iv = bootstrap_pcd(res, x, y, g, cfg).interval
    assert iv.n_ok == 50 and iv.pcd_ci == tuple(np.quantile(pcds, [0.025, 0.975]))
    with mock.patch.object(boot_module, "_resample_cells", partial(_resample_cells, batched=False)):
        before = bootstrap_pcd(res, x, y, g, cfg).interval
    # the grids' memory order decides how mPCD's mean is summed: the interval is the same to the last bit
    assert (iv.pcd_ci, iv.mpcd_ci) == (before.pcd_ci, before.mpcd_ci)
    np.testing.assert_array_equal(iv.grid_lo, before.grid_lo)
    np.testing.assert_array_equal(iv.grid_hi, before.grid_hi)


def test_nan_samples_are_refused_before_any_resample():
    x, y, g = hurdle_samples(300, 1, tracks=10)
    res = compute_pcd(x, y, PCDConfig())
    y[5] = np.nan
    with pytest.raises(PCDError, match="sample 5 is not finite"):
        bootstrap_pcd(res, x, y, g, PCDConfig(bootstrap={"n_boot": 5}))


def test_normal_equations_equal_the_dense_products():
    rng = np.random.default_rng(0)
    cfg = PCDConfig(n_splines=9, spline_degree=3)
    sizes = [40, 1, 0, 25]  # a system of one row and an empty one
    system = np.repeat(np.arange(len(sizes)), sizes)
    x = np.concatenate([np.sort(rng.uniform(0, 100, s)) for s in sizes])
    lo = np.array([x[system == s].min() if s_n else 0.0 for s, s_n in enumerate(sizes)])
    hi = np.array([x[system == s].max() if s_n else 1.0 for s, s_n in enumerate(sizes)])
    w, z = rng.integers(0, 5, x.size).astype(float), rng.normal(size=x.size)
    rows = basis_rows(x, lo[system], hi[system], system, cfg)
    gram, rhs = normal_equations(rows, w, z, len(sizes), cfg.n_splines)
    knots = uniform_knots(cfg.n_splines, cfg.spline_degree)
    coef = rng.normal(size=(len(sizes), cfg.n_splines))
    for s in (0, 1, 3):
        m = system == s
        scale = hi[s] - lo[s] if hi[s] != lo[s] else 1.0
        b = BSpline.design_matrix(np.clip((x[m] - lo[s]) / scale, 0, 1), knots, 3).toarray()
        np.testing.assert_allclose(gram[s], b.T @ (b * w[m, None]), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rhs[s], b.T @ (w[m] * z[m]), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rows.apply(coef)[m], b @ coef[s], rtol=1e-13, atol=1e-13)
    assert not gram[2].any() and not rhs[2].any()  # the empty system


def test_largest_distance_above_threshold_equals_the_per_system_search():
    rng = np.random.default_rng(3)
    sizes = [7, 0, 1, 30, 12]
    first = np.concatenate([[0], np.cumsum(sizes)])
    x = np.concatenate([np.sort(rng.uniform(1, 50, s)) for s in sizes])
    p_t = np.array([0.5, 0.1, 0.9, 0.5, 0.3])  # unsorted, with a repeat
    prob = np.round(rng.random((4, x.size)), 1)  # ties with the thresholds
    prob[0] = 0.0  # nothing reaches any threshold
    got = largest_distances(x, first, prob, p_t)
    for s in range(len(sizes)):
        part = slice(first[s], first[s + 1])
        if sizes[s]:
            want, _ = pcd_from_probabilities(x[part], prob[:, part], p_t, "paper")
        else:
            want = np.zeros((prob.shape[0], p_t.size))
        np.testing.assert_array_equal(got[s], want)
