"""P-spline fit (PCD paper eq. 2–4) against pyGAM's reference values and an independent dense solve."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perception_safety.evaluation.pcd.pspline import (
    PYGAM_RIDGE,
    SplineFitError,
    bspline_basis,
    difference_penalty,
    fit_pspline,
    fitted_values,
    uniform_knots,
)

PCD_REF = Path(__file__).resolve().parents[3] / "reference" / "pcd"


@pytest.fixture(scope="module")
def unit() -> dict:
    return json.loads((PCD_REF / "golden_unit.json").read_text())


def cox_de_boor(u: float, knots: np.ndarray, degree: int) -> np.ndarray:
    """Independent B-spline evaluation by the Cox–de Boor recursion (knots extend past [0, 1], so no end case)."""
    assert knots[degree] <= u <= knots[len(knots) - degree - 1] < knots[-1]
    b = np.array([knots[i] <= u < knots[i + 1] for i in range(len(knots) - 1)], dtype=float)
    for d in range(1, degree + 1):
        nb = np.zeros(len(knots) - 1 - d)
        for i in range(len(nb)):
            left = (u - knots[i]) / (knots[i + d] - knots[i]) * b[i] if knots[i + d] > knots[i] else 0.0
            right = (
                (knots[i + d + 1] - u) / (knots[i + d + 1] - knots[i + 1]) * b[i + 1]
                if knots[i + d + 1] > knots[i + 1]
                else 0.0
            )
            nb[i] = left + right
        b = nb
    return b


def test_basis_rows_match_pygam(unit):
    knots = uniform_knots(10, 3, last_knot_eps=1e-9)
    got = bspline_basis(np.array(unit["basis_u"]), knots, 3)
    np.testing.assert_allclose(got, np.array(unit["basis_rows"]), atol=1e-12)


def test_basis_matches_cox_de_boor_and_partition_of_unity():
    knots = uniform_knots(10, 3)
    u = np.linspace(0, 1, 37)
    got = bspline_basis(u, knots, 3)
    expect = np.array([cox_de_boor(v, knots, 3) for v in u])
    np.testing.assert_allclose(got, expect, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)


def test_reference_pose_reproduces_pygam_fit(unit):
    x, y = np.array(unit["pspline_x"]), np.array(unit["pspline_y"])
    fit = fit_pspline(x, y, lam=0.6, intercept=True, ridge=PYGAM_RIDGE, last_knot_eps=1e-9)
    np.testing.assert_allclose(fitted_values(fit, x), np.array(unit["pspline_fhat"]), atol=1e-12)


def test_paper_fit_equals_dense_penalised_least_squares():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(5, 80, 150))
    y = np.sin(x / 12) + rng.normal(0, 0.1, x.size)
    fit = fit_pspline(x, y, lam=2.5)
    # independent: Cox–de Boor basis, explicit second differences, augmented least squares via lstsq
    knots = uniform_knots(10, 3)
    u = (x - x.min()) / (x.max() - x.min())
    basis = np.array([cox_de_boor(v, knots, 3) for v in u])
    d2 = np.array(
        [[1.0 if j == i else -2.0 if j == i + 1 else 1.0 if j == i + 2 else 0.0 for j in range(10)] for i in range(8)]
    )
    aug = np.vstack([basis, np.sqrt(2.5) * d2])
    beta, *_ = np.linalg.lstsq(aug, np.r_[y, np.zeros(8)], rcond=None)
    np.testing.assert_allclose(fit.coef, beta, atol=1e-9)
    np.testing.assert_allclose(fit.predict(x), basis @ beta, atol=1e-9)
    np.testing.assert_allclose(fit.rss, np.sum((y - basis @ beta) ** 2), rtol=1e-9)


def test_penalty_is_sum_of_squared_second_differences():
    beta = np.array([1.0, 4.0, 2.0, 8.0, 5.0, 7.0])
    expect = sum((beta[j] - 2 * beta[j - 1] + beta[j - 2]) ** 2 for j in range(2, 6))
    assert beta @ difference_penalty(6, 2) @ beta == pytest.approx(expect)


def test_large_lambda_tends_to_straight_line():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 50, 200)
    y = 0.9 - 0.01 * x + 0.1 * np.sin(x) + rng.normal(0, 0.02, x.size)
    fit = fit_pspline(x, y, lam=1e9)
    line = np.polyval(np.polyfit(x, y, 1), x)
    np.testing.assert_allclose(fit.predict(x), line, atol=1e-4)


@pytest.mark.parametrize("criterion", ["aic", "bic", "gcv"])
def test_lambda_selection_minimises_its_criterion(criterion):
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 10, 120))
    y = np.cos(x) + rng.normal(0, 0.3, x.size)
    grid = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    chosen = fit_pspline(x, y, criterion=criterion, lam_grid=grid)

    def score(lam: float) -> float:
        # independent: dense hat matrix H = B (B'B + lam D'D)^-1 B'
        knots = uniform_knots(10, 3)
        u = (x - x.min()) / (x.max() - x.min())
        b = np.array([cox_de_boor(v, knots, 3) for v in u])
        d = np.diff(np.eye(10), 2, axis=0)
        h = b @ np.linalg.inv(b.T @ b + lam * d.T @ d) @ b.T
        rss = float(np.sum((y - h @ y) ** 2))
        edf = float(np.trace(h))
        n = x.size
        return {
            "aic": n * np.log(rss / n) + 2 * edf,
            "bic": n * np.log(rss / n) + np.log(n) * edf,
            "gcv": n * rss / (n - edf) ** 2,
        }[criterion]

    scores = {lam: score(lam) for lam in grid}
    assert chosen.lam == min(scores, key=scores.get)


def test_bad_input_raises_clear_errors():
    with pytest.raises(SplineFitError, match="fewer than the 10 spline functions"):
        fit_pspline(np.arange(5.0), np.ones(5))
    with pytest.raises(SplineFitError, match="finite"):
        fit_pspline(np.arange(20.0), np.r_[np.ones(19), np.nan])
    with pytest.raises(SplineFitError, match="distinct"):
        fit_pspline(np.full(20, 3.0), np.ones(20))
    with pytest.raises(SplineFitError, match="sorted"):
        fit_pspline(np.arange(20.0)[::-1], np.ones(20))


def test_a_fit_without_edf_has_the_same_curve_bit_for_bit():
    """The change-point test's segment refits skip the edf solve: coefficients, RSS and fitted values are those of
    the full fit, and edf is NaN (never a made-up number); a chosen lambda still computes it."""
    from perception_safety.evaluation.pcd.pspline import fitted_values

    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 80, 300))
    y = np.sin(x / 12) + rng.normal(0, 0.2, x.size)
    w = rng.integers(1, 4, x.size).astype(float)
    full = fit_pspline(x, y, lam=0.6, weights=w, rss_offset=1.5)
    lean = fit_pspline(x, y, lam=0.6, weights=w, rss_offset=1.5, with_edf=False)
    assert lean.coef.tobytes() == full.coef.tobytes() and lean.rss == full.rss
    assert fitted_values(lean, x).tobytes() == fitted_values(full, x).tobytes()
    assert np.isnan(lean.edf) and 1 < full.edf < 10
    assert fit_pspline(x, y, criterion="gcv", with_edf=False).edf == fit_pspline(x, y, criterion="gcv").edf
