"""Bootstrap intervals of PCD/mPCD (issue 13 item 5): whole groups resampled, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.pcd.bootstrap import _gather, bootstrap_pcd
from perception_safety.evaluation.pcd.compute import PCDConfig, compute_pcd
from perception_safety.evaluation.pcd.synthetic import hurdle_samples


def test_gather_returns_the_samples_of_the_picked_groups():
    lengths = np.array([2, 1, 3])
    starts = np.array([0, 2, 3])
    np.testing.assert_array_equal(_gather(starts, lengths, np.array([2, 0, 2, 1])), [3, 4, 5, 0, 1, 3, 4, 5, 2])


def _cfg(n_boot: int = 40, seed: int = 0) -> PCDConfig:
    return PCDConfig(bootstrap={"n_boot": n_boot, "seed": seed})


def test_interval_is_seeded_contains_the_estimate_and_goes_to_json():
    x, y, g = hurdle_samples(1000, 4, tracks=30)
    cfg = _cfg()
    res = compute_pcd(x, y, cfg)
    a = bootstrap_pcd(res, x, y, g, cfg)
    b = bootstrap_pcd(res, x, y, g, cfg)
    assert (a.interval.pcd_ci, a.interval.mpcd_ci) == (b.interval.pcd_ci, b.interval.mpcd_ci)
    np.testing.assert_array_equal(a.interval.grid_lo, b.interval.grid_lo)
    lo, hi = a.interval.pcd_ci
    assert lo <= res.pcd <= hi and hi - lo < 30
    mlo, mhi = a.interval.mpcd_ci
    assert mlo <= res.mpcd <= mhi
    assert np.all(a.interval.grid_lo <= a.interval.grid_hi)
    d = a.to_dict()
    assert d["pcd_ci"] == [lo, hi] and d["mpcd_ci"] == [mlo, mhi]
    assert d["bootstrap"]["n_boot"] == 40 and d["bootstrap"]["unit"] == "track" and d["bootstrap"]["n_groups"] == 30
    assert np.array(d["grid"]["lower"]).shape == (9, 9) and np.array(d["grid"]["upper"]).shape == (9, 9)
    assert (d["pcd"]["lower"], d["pcd"]["upper"]) == (lo, hi)
    other = bootstrap_pcd(res, x, y, g, _cfg(seed=1))
    assert other.interval.pcd_ci != a.interval.pcd_ci


def test_resampling_tracks_widens_the_interval_when_tracks_are_correlated():
    # each track has its own score level: frames of one track are not independent samples
    rng = np.random.default_rng(9)
    tracks = 12
    g = rng.integers(0, tracks, 900)
    x = rng.uniform(5, 200, 900)
    level = rng.normal(0.62, 0.08, tracks)[g]
    y = np.clip(level - 0.0015 * x + rng.normal(0, 0.03, 900), 0.01, 1)
    cfg = _cfg(60)
    res = compute_pcd(x, y, cfg)
    by_track = bootstrap_pcd(res, x, y, g, cfg).interval
    by_sample = bootstrap_pcd(res, x, y, None, cfg)
    assert by_sample.interval.unit == "sample"
    assert any(w.code == "pcd_bootstrap_unit" for w in by_sample.warnings)
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(by_track.mpcd_ci) > 2 * width(by_sample.interval.mpcd_ci)


def test_few_groups_warn_and_one_group_gives_no_interval():
    x, y, _ = hurdle_samples(600, 1)
    cfg = _cfg(10)
    res = compute_pcd(x, y, cfg)
    one = bootstrap_pcd(res, x, y, np.zeros(x.size, dtype=int), cfg)
    assert one.interval is None and any(w.code == "pcd_bootstrap_groups" for w in one.warnings)
    few = bootstrap_pcd(res, x, y, np.arange(x.size) % 3, cfg)
    assert few.interval is not None and few.interval.n_groups == 3
    assert any("only 3 resampling units" in w.message for w in few.warnings)
    off = bootstrap_pcd(res, x, y, None, _cfg(0))
    assert off is res


def test_group_ids_must_match_samples():
    from perception_safety.evaluation.pcd.compute import PCDError

    x, y, g = hurdle_samples(200, 1)
    with pytest.raises(PCDError, match="group ids"):
        bootstrap_pcd(compute_pcd(x, y), x, y, g[:-1], _cfg(5))


def _brute_force(x, y, g, cfg, result):
    """The bootstrap by definition: draw whole groups (same generator and order of draws as the module), rerun
    the whole estimate on the resampled samples, take percentiles."""
    _, unit = np.unique(g, return_inverse=True)
    k = unit.max() + 1
    members = [np.flatnonzero(unit == u) for u in range(k)]
    fixed = cfg.model_copy(update={"model": result.model})
    rng = np.random.default_rng(cfg.bootstrap.seed)
    pcds, grids = [], []
    for _ in range(cfg.bootstrap.n_boot):
        idx = np.concatenate([members[u] for u in rng.integers(0, k, k)])
        res = compute_pcd(x[idx], y[idx], fixed, diagnose=False)
        pcds.append(res.pcd)
        grids.append(res.grid)
    q = [(1 - cfg.bootstrap.level) / 2, (1 + cfg.bootstrap.level) / 2]
    stack = np.stack(grids)
    return np.quantile(pcds, q), np.quantile(stack.mean(axis=(1, 2)), q), np.quantile(stack, q, axis=0)


def _assert_same_interval(iv, ref, atol):
    np.testing.assert_allclose(iv.pcd_ci, ref[0], rtol=0, atol=atol)
    np.testing.assert_allclose(iv.mpcd_ci, ref[1], rtol=0, atol=atol)
    np.testing.assert_allclose(iv.grid_lo, ref[2][0], rtol=0, atol=atol)
    np.testing.assert_allclose(iv.grid_hi, ref[2][1], rtol=0, atol=atol)


SETTINGS = [{"model": "hurdle"}, {"model": "gaussian"}, {"lam_selection": "aic"}, {"min_side": 5, "alpha": 0.3}]


@pytest.mark.parametrize("settings", SETTINGS)
def test_resamples_from_counts_equal_the_estimate_rerun_on_each_resample(settings):
    # distinct distances <= MAX_CELLS: each cell is one distance, the cell sums are the resample's samples
    x, y, g = hurdle_samples(1500, 6, tracks=25)
    cfg = PCDConfig(**settings, bootstrap={"n_boot": 20, "seed": 3})
    res = compute_pcd(x, y, cfg)
    iv = bootstrap_pcd(res, x, y, g, cfg).interval
    assert iv.n_ok == 20 and iv.to_dict()["resample_distances"] == "exact"
    _assert_same_interval(iv, _brute_force(x, y, g, cfg, res), atol=1e-9)


def test_resamples_from_counts_with_tied_distances_and_negative_scores():
    # distances rounded to 1 m (many samples share one, across tracks); Gaussian scores below 0 far out
    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(5, 150, 1500))
    g = rng.integers(0, 20, 1500)
    y = 0.9 - 0.004 * x + rng.normal(0, 0.05 + 0.001 * x, 1500)
    cfg = PCDConfig(model="gaussian", lam_selection="gcv", bootstrap={"n_boot": 20, "seed": 5})
    res = compute_pcd(x, y, cfg)
    iv = bootstrap_pcd(res, x, y, g, cfg).interval
    _assert_same_interval(iv, _brute_force(x, y, g, cfg, res), atol=1e-9)


def test_pooled_cells_are_the_estimate_on_distances_rounded_to_the_cell_means(monkeypatch):
    from perception_safety.evaluation.pcd import cells

    monkeypatch.setattr(cells, "MAX_CELLS", 300)
    x, y, g = hurdle_samples(3000, 2, tracks=40)
    cfg = PCDConfig(model="hurdle", bootstrap={"n_boot": 25, "seed": 1})
    res = compute_pcd(x, y, cfg)
    iv = bootstrap_pcd(res, x, y, g, cfg).interval
    width = (x.max() - x.min()) / 300
    assert iv.cell_width_m == pytest.approx(width)
    assert "pooled in cells of 0.649 m" in iv.to_dict()["resample_distances"]
    # the documented meaning, computed independently: every distance replaced by the mean distance of its bin
    bins = np.minimum(((x - x.min()) / width).astype(int), 299)
    rounded = (np.bincount(bins, weights=x) / np.maximum(np.bincount(bins), 1))[bins]
    _assert_same_interval(iv, _brute_force(rounded, y, g, cfg, res), atol=1e-9)
    # and a 0.65 m grid moves the interval by a fraction of its width only
    exact = _brute_force(x, y, g, cfg, res)
    assert np.abs(np.subtract(iv.pcd_ci, exact[0])).max() < 0.1 * (exact[0][1] - exact[0][0]) + width


def test_reference_method_reruns_the_estimate_on_each_resample():
    x, y, g = hurdle_samples(1200, 3, tracks=20)
    y = np.where(y > 0, y, 0.02)  # the reference reproduces the Gaussian model
    cfg = PCDConfig(method="reference", bootstrap={"n_boot": 12, "seed": 2})
    res = compute_pcd(x, y, cfg)
    iv = bootstrap_pcd(res, x, y, g, cfg).interval
    _assert_same_interval(iv, _brute_force(x, y, g, cfg, res), atol=1e-9)
