"""Hurdle model on known-answer data (issue 15): logistic detection curve x Gaussian scores N(0.75, 0.05)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.evaluation.pcd.compute import PCDConfig, PCDError, compute_pcd, pcd_at
from perception_safety.evaluation.pcd.logistic import fit_logistic_pspline
from perception_safety.evaluation.pcd.synthetic import hurdle_samples

X50, SCALE, MU, SD, X_MIN, X_MAX = 120.0, 10.0, 0.75, 0.05, 5.0, 200.0
GRID = tuple(round(0.1 * i, 10) for i in range(1, 10))


def analytic_pcd(y_t: float, p_t: float) -> float:
    """Largest x with p(x) Phi((mu - y_t)/sd) > p_t, p(x) = 1/(1 + exp((x - x50)/scale)); 0 m when none."""
    c = 0.5 * (1.0 + math.erf((MU - y_t) / (SD * math.sqrt(2.0))))
    if c <= p_t:
        return 0.0
    root = X50 + SCALE * math.log(c / p_t - 1.0)
    return 0.0 if root < X_MIN else min(root, X_MAX)


ANALYTIC_MPCD = float(np.mean([[analytic_pcd(a, b) for b in GRID] for a in GRID]))


def test_analytic_values_are_the_issue_numbers():
    assert analytic_pcd(0.5, 0.5) == pytest.approx(120.0, abs=1e-3)
    assert float(ANALYTIC_MPCD) == pytest.approx(93.0, abs=0.1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_picks_hurdle_and_finds_the_analytic_pcd(seed):
    x, y, _ = hurdle_samples(2000, seed)
    res = compute_pcd(x, y, PCDConfig())  # model: auto
    assert res.model == "hurdle" and res.model_choice.startswith("auto: hurdle")
    assert res.pcd == pytest.approx(analytic_pcd(0.5, 0.5), abs=4.0)
    assert res.mpcd == pytest.approx(ANALYTIC_MPCD, abs=3.0)
    assert len(res.change_points.distances) <= 2  # the variance of the detected scores is constant
    # every cell within a few metres (the Gaussian model is off by > 100 m in single cells on this data)
    truth = np.array([[analytic_pcd(a, b) for b in GRID] for a in GRID])
    assert np.max(np.abs(res.grid - truth)) < 10.0
    assert [w.code for w in res.warnings] == ["pcd_zero_share"]


def test_gaussian_model_on_the_same_data_is_wrong_and_says_so():
    x, y, _ = hurdle_samples(2000, 0)
    res = compute_pcd(x, y, PCDConfig(model="gaussian"))
    codes = {w.code for w in res.warnings}
    assert {"pcd_zero_share", "pcd_mean_fit"} <= codes
    assert abs(res.mpcd - ANALYTIC_MPCD) > 3.0


def test_hurdle_probability_is_p_det_times_the_detected_law():
    x, y, _ = hurdle_samples(1500, 5)
    res = compute_pcd(x, y, PCDConfig(model="hurdle"))
    i = int(np.searchsorted(res.x, 110.0))
    p = res.p_det[i] * 0.5 * (1 + math.erf((res.fitted[i] - 0.6) / (res.sigma[i] * math.sqrt(2))))
    # brute force eq. 10 on the hurdle probability at y_t = 0.6, p_t = 0.3
    probs = res.p_det * 0.5 * (1 + np.vectorize(math.erf)((res.fitted - 0.6) / (res.sigma * math.sqrt(2))))
    assert pcd_at(res, 0.6, 0.3) == pytest.approx(float(np.max(res.x[probs > 0.3])))
    assert 0 < p < 1
    # the sigma of the detected scores is the Gaussian's, not inflated by the zeros
    assert res.segments[0].sigma == pytest.approx(SD, rel=0.1)
    assert sum(s.n for s in res.segments) == int(np.count_nonzero(res.y > 0))


def test_auto_stays_gaussian_without_zeros_and_in_reference_mode():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 100, 300))
    y = np.clip(0.9 - 0.005 * x + rng.normal(0, 0.05, 300), 0.01, 1)
    res = compute_pcd(x, y)
    assert res.model == "gaussian" and res.p_det is None and "auto: gaussian" in res.model_choice
    xz, yz, _ = hurdle_samples(600, 1)
    ref = compute_pcd(xz, yz, PCDConfig(method="reference"))
    assert ref.model == "gaussian" and "reference" in ref.model_choice


def test_hurdle_threshold_is_configurable():
    x, y, _ = hurdle_samples(800, 2)
    share = float(np.mean(y == 0))
    assert compute_pcd(x, y, PCDConfig(hurdle_zero_share=share + 0.01)).model == "gaussian"
    assert compute_pcd(x, y, PCDConfig(hurdle_zero_share=share - 0.01)).model == "hurdle"


def test_hurdle_with_too_few_detections_falls_back_with_a_warning():
    x = np.linspace(0, 100, 200)
    y = np.zeros(200)
    y[:5] = 0.8
    res = compute_pcd(x, y, PCDConfig(model="hurdle"))
    assert res.model == "gaussian"
    assert any(w.code == "pcd_hurdle_fallback" for w in res.warnings)


def test_reference_with_hurdle_is_a_config_error():
    with pytest.raises(ValueError, match="Gaussian model only"):
        PCDConfig(method="reference", model="hurdle")


def test_logistic_pspline_recovers_the_detection_curve():
    rng = np.random.default_rng(11)
    x = np.sort(rng.uniform(X_MIN, X_MAX, 4000))
    truth = 1.0 / (1.0 + np.exp((x - X50) / SCALE))
    hit = rng.uniform(size=x.size) < truth
    for criterion in ("fixed", "aic", "gcv"):
        fit = fit_logistic_pspline(x, hit, criterion=criterion, lam_grid=(0.01, 1.0, 100.0))
        assert fit.converged
        assert np.max(np.abs(fit.predict(x) - truth)) < 0.08, criterion
    # complete separation stays finite (penalty + ridge), p in [0, 1]
    sep = fit_logistic_pspline(x, x < 100.0)
    p = sep.predict(x)
    assert np.all(np.isfinite(p)) and p[0] > 0.99 and p[-1] < 0.01


def test_logistic_bad_input():
    from perception_safety.evaluation.pcd.pspline import SplineFitError

    with pytest.raises(SplineFitError, match="fewer than"):
        fit_logistic_pspline(np.arange(5.0), np.ones(5, dtype=bool))
    with pytest.raises(PCDError):
        compute_pcd(np.full(30, 3.0), np.r_[np.zeros(15), np.ones(15) * 0.7], PCDConfig(model="hurdle"))
