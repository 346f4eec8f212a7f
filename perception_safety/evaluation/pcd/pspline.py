"""Penalised B-spline (P-spline) regression of the PCD paper, eq. 2–4.

``f(x) = sum_j beta_j B_j(x)`` with K cubic B-splines on equally spaced knots over
the data range and the penalty ``lam * sum_j (Delta^2 beta_j)^2`` (eq. 4). The
penalised least-squares problem is solved directly from its K x K normal equations.
The optional intercept column and tiny ridge reproduce how the public reference
implementation (pyGAM) poses the same fit; they do not change the fitted curve
beyond ~1e-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.linalg import LinAlgError, solve

from perception_safety.errors import PerceptionSafetyError

LambdaCriterion = Literal["fixed", "aic", "bic", "gcv"]

#: Ridge pyGAM adds to every coefficient (sqrt of float64 machine epsilon).
PYGAM_RIDGE = float(np.sqrt(np.finfo(np.float64).eps))
#: Default lambda search grid for AIC/BIC/GCV selection.
DEFAULT_LAMBDA_GRID: tuple[float, ...] = tuple(float(v) for v in np.logspace(-3, 4, 29))


class SplineFitError(PerceptionSafetyError):
    """The data cannot support the requested P-spline fit."""


@lru_cache(maxsize=64)
def uniform_knots(n_splines: int = 10, degree: int = 3, last_knot_eps: float = 0.0) -> np.ndarray:
    """Knot vector on the unit interval: ``n_splines - degree`` equal spans, extended by ``degree`` spans per side
    (read-only, made once per shape: every fit of a bootstrap asks for the same)."""
    if degree < 0 or n_splines < degree + 1:
        raise SplineFitError(f"n_splines ({n_splines}) must be at least degree + 1 ({degree + 1})")
    inner = np.linspace(0.0, 1.0, n_splines - degree + 1)
    step = inner[1] - inner[0]
    ext = np.arange(1, degree + 1) * step
    knots = np.r_[-ext[::-1], inner, 1.0 + ext]
    knots[-1] += last_knot_eps
    knots.flags.writeable = False
    return knots


def design(u: np.ndarray, knots: np.ndarray, degree: int = 3):
    """Sparse design matrix of the B-splines at ``u`` already inside the knot range (clipped by every caller).

    ``extrapolate=True`` only skips scipy's range check, which iterates the array in Python (``min(x)``): ~15 % of
    a bootstrap resample at 20k points (issue 27); inside the range the matrix is the same, bit for bit. Up to
    `CACHED_POINTS` points the last few matrices are kept (a segment fit and its residuals evaluate the same
    ``u``; scipy's set-up is most of the cost there); callers never modify it.
    """
    from scipy.interpolate import BSpline  # ~0.15 s to import: loaded by the fit, not by the config or the map

    u = np.asarray(u, dtype=np.float64)
    if u.size > CACHED_POINTS:
        return BSpline.design_matrix(u, knots, degree, extrapolate=True)
    return _design(u.tobytes(), np.asarray(knots, dtype=np.float64).tobytes(), degree)


#: Points up to which `design` keeps its matrices (the bootstrap's cells; larger inputs are costed by their size).
CACHED_POINTS = 4096


@lru_cache(maxsize=8)
def _design(u: bytes, knots: bytes, degree: int):
    from scipy.interpolate import BSpline

    return BSpline.design_matrix(np.frombuffer(u), np.frombuffer(knots), degree, extrapolate=True)


def bspline_basis(u: np.ndarray, knots: np.ndarray, degree: int = 3) -> np.ndarray:
    """Dense (n, K) design matrix of the B-splines at unit-interval coordinates ``u`` (eq. 3)."""
    u = np.asarray(u, dtype=float)
    lo, hi = knots[degree], knots[-degree - 1]
    if u.size and (u.min() < lo or u.max() > hi):
        raise SplineFitError(f"basis evaluated outside its knot range [{lo}, {hi}]")
    return design(u, knots, degree).toarray()


@lru_cache(maxsize=64)
def difference_penalty(n_coefs: int, order: int = 2) -> np.ndarray:
    """``D'D`` for the ``order``-th difference operator ``D``: ``beta' D'D beta = sum (Delta^order beta)^2`` (eq. 4)
    (read-only, made once per shape)."""
    d = np.diff(np.eye(n_coefs), n=order, axis=0)
    out = d.T @ d
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class PSplineFit:
    """A fitted P-spline: coefficients over the basis of ``knots`` on ``[x_min, x_max]``."""

    x_min: float
    x_max: float
    knots: np.ndarray
    degree: int
    coef: np.ndarray
    intercept: float
    lam: float
    edf: float
    rss: float
    n: int

    def to_unit(self, x: np.ndarray) -> np.ndarray:
        """Map distances to the unit interval the knots live on (the data range becomes [0, 1])."""
        scale = self.x_max - self.x_min
        if scale == 0:
            scale = 1.0
        return (np.asarray(x, dtype=float) - self.x_min) / scale

    def basis(self, x: np.ndarray) -> np.ndarray:
        """Design matrix at ``x`` (must lie within the fitted range)."""
        u = np.clip(self.to_unit(x), 0.0, 1.0)
        return bspline_basis(u, self.knots, self.degree)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """``f(x)`` within the fitted range (eq. 3)."""
        return self.basis(x) @ self.coef + self.intercept


def _gram(x: np.ndarray, y: np.ndarray, knots: np.ndarray, degree: int, intercept: bool, w: np.ndarray | None = None):
    scale = x[-1] - x[0] if x[-1] != x[0] else 1.0
    u = (x - x[0]) / scale
    u = np.clip(u, 0.0, 1.0)
    # dense n x K: for K ~ 10 the dense products are faster than scipy.sparse's per-call overhead
    sparse = design(u, knots, degree).toarray()
    weighted = sparse if w is None else sparse * w[:, None]
    k = sparse.shape[1]
    m = k + int(intercept)
    gram = np.zeros((m, m))
    gram[:k, :k] = sparse.T @ weighted
    rhs = np.zeros(m)
    rhs[:k] = weighted.T @ y
    if intercept:
        col = weighted.sum(axis=0)
        gram[:k, k] = col
        gram[k, :k] = col
        gram[k, k] = x.size if w is None else w.sum()
        rhs[k] = y.sum() if w is None else np.sum(w * y)
    return sparse, gram, rhs


def _solve(gram: np.ndarray, penalty: np.ndarray, rhs: np.ndarray, lam: float, ridge: float) -> np.ndarray:
    a = gram + lam * penalty + ridge * np.eye(gram.shape[0])
    try:
        return solve(a, rhs, assume_a="pos")
    except (LinAlgError, ValueError) as exc:
        raise SplineFitError(f"P-spline normal equations are singular (lambda={lam}): {exc}") from exc


def fit_pspline(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    lam: float = 0.6,
    n_splines: int = 10,
    degree: int = 3,
    penalty_order: int = 2,
    intercept: bool = False,
    ridge: float = 0.0,
    last_knot_eps: float = 0.0,
    criterion: LambdaCriterion = "fixed",
    lam_grid: Sequence[float] = DEFAULT_LAMBDA_GRID,
    weights: np.ndarray | None = None,
    rss_offset: float = 0.0,
    with_edf: bool = True,
) -> PSplineFit:
    """Fit eq. 4 on sorted ``x``; with ``criterion`` aic/bic/gcv, ``lam`` is chosen from ``lam_grid``.

    AIC = n log(RSS/n) + 2 edf, BIC = n log(RSS/n) + log(n) edf, GCV = n RSS / (n - edf)^2,
    with edf = trace of the hat matrix.
    ``weights``: ``x``, ``y`` are cells of ``weights[i]`` samples with mean ``y[i]`` at one distance (the bootstrap's
    resamples, `cells.py`); then n is the number of samples and ``rss_offset`` their sum of squares about the cell
    means, so the fit, RSS and criteria are those of the samples themselves.
    ``with_edf=False`` (a fixed ``lam`` only): ``edf`` is not computed (NaN) — a second K x K solve that the
    change-point test's segment refits, which read only the fitted values, do not need.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    n = x.size if w is None else float(w.sum())
    if x.shape != y.shape or x.ndim != 1:
        raise SplineFitError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    if n < n_splines:
        raise SplineFitError(f"{n} points are fewer than the {n_splines} spline functions")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise SplineFitError("x and y must be finite")
    if np.any(np.diff(x) < 0):
        raise SplineFitError("x must be sorted ascending")
    if x[-1] == x[0]:
        raise SplineFitError("all distances are equal; a spline over distance needs at least two distinct values")
    if penalty_order < 1 or penalty_order >= n_splines:
        raise SplineFitError(f"penalty_order must lie in [1, {n_splines - 1}], got {penalty_order}")
    knots = uniform_knots(n_splines, degree, last_knot_eps)
    sparse, gram, rhs = _gram(x, y, knots, degree, intercept, w)
    m = gram.shape[0]
    penalty = np.zeros((m, m))
    penalty[:n_splines, :n_splines] = difference_penalty(n_splines, penalty_order)

    def fit_at(lam_value: float) -> tuple[np.ndarray, float, float]:
        beta = _solve(gram, penalty, rhs, lam_value, ridge)
        fitted = sparse @ beta[:n_splines] + (beta[n_splines] if intercept else 0.0)
        rss = float(np.sum((y - fitted) ** 2)) if w is None else float(np.sum(w * (y - fitted) ** 2)) + rss_offset
        if not with_edf and criterion == "fixed":
            return beta, rss, float("nan")
        a = gram + lam_value * penalty + ridge * np.eye(m)
        edf = float(np.trace(solve(a, gram, assume_a="pos")))
        return beta, rss, edf

    if criterion == "fixed":
        if not (np.isfinite(lam) and lam >= 0):
            raise SplineFitError(f"lambda must be finite and >= 0, got {lam}")
        chosen = float(lam)
        beta, rss, edf = fit_at(chosen)
    else:
        grid = np.asarray(list(lam_grid), dtype=float)
        if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
            raise SplineFitError("lambda grid must be non-empty, finite and >= 0")
        floor = np.finfo(float).tiny
        best = None
        for lam_value in grid:
            beta_i, rss_i, edf_i = fit_at(float(lam_value))
            loglik = n * np.log(max(rss_i / n, floor))
            if criterion == "aic":
                score = loglik + 2.0 * edf_i
            elif criterion == "bic":
                score = loglik + np.log(n) * edf_i
            elif criterion == "gcv":
                score = n * rss_i / max(n - edf_i, 1e-12) ** 2
            else:
                raise SplineFitError(f"unknown lambda criterion {criterion!r}")
            if best is None or score < best[0]:
                best = (score, float(lam_value), beta_i, rss_i, edf_i)
        if best is None:
            raise SplineFitError("lambda selection: the lambda grid is empty")
        _, chosen, beta, rss, edf = best
    return PSplineFit(
        x_min=float(x[0]),
        x_max=float(x[-1]),
        knots=knots,
        degree=degree,
        coef=beta[:n_splines].copy(),
        intercept=float(beta[n_splines]) if intercept else 0.0,
        lam=chosen,
        edf=edf,
        rss=rss,
        n=round(n),
    )


def fitted_values(fit: PSplineFit, x: np.ndarray) -> np.ndarray:
    """``f(x_i)`` at the fitted sample positions (sparse basis, O(n))."""
    x = np.asarray(x, dtype=float)
    scale = fit.x_max - fit.x_min if fit.x_max != fit.x_min else 1.0
    u = np.clip((x - fit.x_min) / scale, 0.0, 1.0)
    return design(u, fit.knots, fit.degree) @ fit.coef + fit.intercept
