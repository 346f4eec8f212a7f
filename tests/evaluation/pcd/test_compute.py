"""PCD / mPCD (paper eq. 9–10): reference-implementation golden values, paper rules, monotonicity, bad input."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.evaluation.pcd.compute import (
    PCDConfig,
    PCDError,
    compute_pcd,
    pcd_at,
    pcd_from_probabilities,
)
from perception_safety.io.config import ConfigError, load_model

PCD_REF = Path(__file__).resolve().parents[3] / "reference" / "pcd"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads((PCD_REF / "demo_notebook_golden.json").read_text())["result"]


@pytest.fixture(scope="module")
def unit() -> dict:
    return json.loads((PCD_REF / "golden_unit.json").read_text())


@pytest.fixture(scope="module")
def demo() -> tuple[np.ndarray, np.ndarray]:
    data = np.genfromtxt(PCD_REF / "demo_notebook.csv", delimiter=",", names=True)
    return data["distance_m"], data["y"]


@pytest.fixture(scope="module")
def reference_result(demo):
    return compute_pcd(*demo, PCDConfig(method="reference"))


def test_reference_change_points(reference_result, golden):
    np.testing.assert_allclose(reference_result.change_points.distances, golden["change_points"], rtol=0, atol=1e-9)


def test_reference_first_test_statistics(reference_result, golden):
    lo, hi, first = reference_result.change_points.tests[0]
    ref = golden["single_test_full"]
    assert (lo, hi, first.n) == (0, 600, ref["n"])
    assert first.tau == ref["argmin_index"]
    assert first.l_min == pytest.approx(ref["L_min"], rel=1e-12)
    assert first.l_full == pytest.approx(ref["L_full"], rel=1e-12)
    assert first.lambda_n == pytest.approx(ref["lambda_n"], rel=1e-9)
    assert first.statistic == pytest.approx(ref["stat_code"], rel=1e-9)
    assert first.critical == pytest.approx(ref["crit_code"], rel=1e-12)


def test_reference_spline_samples(reference_result, golden):
    for index, value in golden["spline_full_fit_samples"].items():
        assert reference_result.fitted[int(index)] == pytest.approx(value, abs=1e-9)


def test_reference_pcd_grid_and_mpcd(reference_result, golden):
    assert reference_result.pcd == pytest.approx(golden["pcd_0p5_0p5_new_rule"], abs=1e-6)
    assert list(reference_result.grid_y_t) == golden["grid_values"]
    assert list(reference_result.grid_p_t) == golden["grid_values"]
    np.testing.assert_allclose(reference_result.grid, golden["pcd_grid_new_rule_rows_yt_cols_pt"], rtol=0, atol=1e-6)
    assert reference_result.mpcd == pytest.approx(golden["mpcd_new_rule"], abs=1e-6)


@pytest.mark.parametrize(("cps", "key"), [([30.0, 70.0], "tiny_pcd_new"), ([], "tiny_pcd_new_nocp")])
def test_reference_pcd_with_given_change_points(unit, cps, key):
    x, y = np.array(unit["pspline_x"]), np.array(unit["pspline_y"])
    res = compute_pcd(x, y, PCDConfig(method="reference"), change_points=cps)
    for cell, expect in unit[key].items():
        yt, pt = (float(part.split("=")[1]) for part in cell.split(","))
        assert pcd_at(res, yt, pt) == pytest.approx(expect, abs=1e-9), cell


def test_paper_mode_on_demo_data(demo, reference_result):
    res = compute_pcd(*demo)  # paper defaults
    x = np.sort(demo[0])
    # same two regimes; the paper reports x_tau, the last distance before each split
    for ref_cp, cp in zip(reference_result.change_points.distances, res.change_points.distances, strict=True):
        assert cp == x[np.searchsorted(x, ref_cp) - 1]
    assert res.grid.shape == (9, 9)
    assert res.mpcd == pytest.approx(float(np.mean(res.grid)))


def brute_force_pcd(x, fitted, sigma, y_t, p_t):
    """Independent eq. 9–10: P(y > y_t) with math.erf and max{x : P > p_t}, 0 when none."""
    best = 0.0
    for xi, fi, si in zip(x, fitted, sigma, strict=True):
        prob = 0.5 * (1 + math.erf((fi - y_t) / (si * math.sqrt(2)))) if si > 0 else float(fi > y_t)
        if prob > p_t:
            best = max(best, xi)
    return best


def test_paper_pcd_matches_brute_force():
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 150, 400))
    y = np.clip(0.95 - 0.006 * x + rng.normal(0, 1, x.size) * np.where(x < 60, 0.03, 0.12), 0, 1)
    res = compute_pcd(x, y)
    for i, yt in enumerate(res.grid_y_t):
        for j, pt in enumerate(res.grid_p_t):
            assert res.grid[i, j] == brute_force_pcd(res.x, res.fitted, res.sigma, yt, pt)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), method=st.sampled_from(["paper", "reference"]))
def test_pcd_monotone_in_both_thresholds(seed, method):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 300))
    x = np.sort(rng.uniform(0, 100, n))
    y = np.clip(0.9 - rng.uniform(0.002, 0.01) * x + rng.normal(0, rng.uniform(0.01, 0.2), n), 0, 1)
    res = compute_pcd(x, y, PCDConfig(method=method))
    # P(y > y_t) falls as y_t rises, so {x : P > p_t} shrinks with y_t and with p_t
    assert np.all(np.diff(res.grid, axis=0) <= 0)
    assert np.all(np.diff(res.grid, axis=1) <= 0)


def test_threshold_equality_rule_differs_between_modes():
    x = np.array([1.0, 2.0, 3.0])
    prob = np.array([[0.9, 0.5, 0.2]])
    paper, reached = pcd_from_probabilities(x, prob, np.array([0.5, 0.95]), "paper")
    ref, _ = pcd_from_probabilities(x, prob, np.array([0.5, 0.95]), "reference")
    assert paper.tolist() == [[1.0, 0.0]] and reached.tolist() == [[True, False]]
    assert ref.tolist() == [[2.0, 0.0]]


def test_pcd_is_the_largest_qualifying_distance_not_the_first_crossing():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    prob = np.array([[0.9, 0.1, 0.8, 0.2]])
    value, _ = pcd_from_probabilities(x, prob, np.array([0.5]), "paper")
    assert value[0, 0] == 3.0


def no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("method", ["paper", "reference"])
def test_too_few_points(method):
    with pytest.raises(PCDError, match="fewer than the 10 spline functions"):
        compute_pcd(np.arange(6.0), np.ones(6) * 0.5, PCDConfig(method=method))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_sample_named(bad):
    y = np.linspace(0.9, 0.1, 50)
    y[17] = bad
    with pytest.raises(PCDError, match="sample 17 is not finite"):
        compute_pcd(np.arange(50.0), y, what="run.csv")


def test_all_distances_equal():
    with pytest.raises(PCDError, match="share the distance"):
        compute_pcd(np.full(30, 12.0), np.linspace(0, 1, 30))


def test_all_zero_scores_paper():
    res = no_warnings(compute_pcd, np.linspace(0, 100, 200), np.zeros(200))
    assert res.change_points.distances == ()
    assert np.all(res.grid == 0) and not res.grid_reached.any() and res.pcd == 0.0
    assert any("never detected" in n for n in res.notes)


def test_all_zero_scores_reference_keeps_its_sigma_zero_rule():
    # the reference sets P = 1 everywhere when sigma is 0 and there are no change points
    res = no_warnings(compute_pcd, np.linspace(0, 100, 200), np.zeros(200), PCDConfig(method="reference"))
    assert np.all(res.grid == 100.0)
    assert any("P = 1" in n for n in res.notes)


def test_constant_scores_paper_uses_degenerate_law():
    x = np.linspace(0, 80, 160)
    res = no_warnings(compute_pcd, x, np.full(160, 0.55))
    assert res.change_points.distances == ()
    assert np.all(res.sigma < 1e-9)
    # y is 0.55 everywhere: P(y > y_t) = 1 for y_t < 0.55 and 0 above
    expect = np.where(np.array(res.grid_y_t)[:, None] < 0.55, 80.0, 0.0) * np.ones((1, 9))
    np.testing.assert_allclose(res.grid, expect)


def test_duplicate_distances_are_accepted_and_reported():
    rng = np.random.default_rng(8)
    x = np.repeat(np.linspace(0, 60, 50), 3)
    y = np.clip(0.9 - 0.01 * x + rng.normal(0, 0.05, x.size), 0, 1)
    res = no_warnings(compute_pcd, x, y)
    assert any("share a distance" in n for n in res.notes)
    assert np.isfinite(res.mpcd)


def test_input_sorted_stably_by_distance():
    x = np.array([5.0, 1.0, 3.0, 1.0] * 5) + np.repeat(np.arange(5.0) * 10, 4)
    y = np.linspace(0.9, 0.2, x.size)
    res = compute_pcd(x, y)
    order = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(res.x, x[order])
    np.testing.assert_array_equal(res.y, y[order])


def test_shipped_config_loads_with_paper_defaults():
    cfg = load_model(REPO / "config" / "pcd.yaml", PCDConfig, section="pcd")
    assert cfg == PCDConfig()
    assert cfg.segment_minimum() == 30 and PCDConfig(method="reference").segment_minimum() == 130


def test_bad_config_names_key(tmp_path):
    bad = tmp_path / "pcd.yaml"
    bad.write_text("pcd:\n  alpha: 2.0\n")
    with pytest.raises(ConfigError, match=r"pcd\.alpha"):
        load_model(bad, PCDConfig, section="pcd")
    bad.write_text("pcd:\n  method: reference\n  lam_selection: gcv\n")
    with pytest.raises(ConfigError, match="fixed lambda"):
        load_model(bad, PCDConfig, section="pcd")


def test_lambda_selection_is_used_and_reported():
    rng = np.random.default_rng(12)
    x = np.sort(rng.uniform(0, 100, 300))
    y = np.clip(0.9 - 0.007 * x + rng.normal(0, 0.05, x.size), 0, 1)
    res = compute_pcd(x, y, PCDConfig(lam_selection="gcv", lam_grid=(0.01, 1.0, 100.0, 10000.0)))
    assert res.spline.lam in (0.01, 1.0, 100.0, 10000.0)
    assert res.to_dict()["lambda"] == res.spline.lam


@pytest.mark.parametrize("method", ["paper", "reference"])
def test_long_run_of_one_distance_is_a_segment_not_an_error(method):
    rng = np.random.default_rng(21)
    x = np.r_[np.full(300, 5.0), np.linspace(6, 100, 300)]
    y = np.clip(
        np.r_[rng.normal(0.8, 0.01, 300), 0.8 - 0.004 * np.linspace(6, 100, 300) + rng.normal(0, 0.2, 300)], 0, 1
    )
    res = no_warnings(compute_pcd, x, y, PCDConfig(method=method))
    assert len(res.change_points.distances) >= 1
    assert np.isfinite(res.mpcd)
