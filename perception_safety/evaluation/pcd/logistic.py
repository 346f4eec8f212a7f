"""Detection probability ``p_det(x)``: a penalised logistic P-spline in distance (hurdle model of docs/pcd.md).

``logit p_det(x) = sum_j beta_j B_j(x)`` on the same basis as the mean (eq. 3: K B-splines, equal knot spans over
the data range) with the same difference penalty (eq. 4), maximising ``loglik - lam/2 sum (Delta^d beta)^2`` by
penalised IRLS. ``lam`` is fixed or chosen from a grid by AIC = dev + 2 edf, BIC = dev + log(n) edf or
GCV = n dev / (n - edf)^2 — the same selection as the mean, with the deviance in place of ``n log(RSS/n)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve
from scipy.special import expit

from perception_safety.evaluation.pcd.pspline import (
    DEFAULT_LAMBDA_GRID,
    LambdaCriterion,
    SplineFitError,
    design,
    difference_penalty,
    uniform_knots,
)

#: Linear predictors are clipped here: beyond, p is 1 or 0 to double precision and IRLS weights vanish.
ETA_LIMIT = 30.0
#: A tiny ridge keeps the normal equations regular when detections and misses separate completely.
RIDGE = 1e-8


@dataclass(frozen=True)
class LogisticFit:
    """A fitted logistic P-spline over ``[x_min, x_max]`` (constant beyond the ends, as the mean)."""

    x_min: float
    x_max: float
    knots: np.ndarray
    degree: int
    coef: np.ndarray
    lam: float
    edf: float
    deviance: float
    n: int
    iterations: int
    converged: bool

    def predict(self, x: np.ndarray) -> np.ndarray:
        """``p_det(x)``; distances outside the fitted range take the value at the nearer end."""
        scale = self.x_max - self.x_min if self.x_max != self.x_min else 1.0
        u = np.clip((np.asarray(x, dtype=float) - self.x_min) / scale, 0.0, 1.0)
        eta = design(u, self.knots, self.degree) @ self.coef
        return expit(np.clip(eta, -ETA_LIMIT, ETA_LIMIT))


def _irls(basis, y: np.ndarray, penalty: np.ndarray, lam: float, max_iter: int, tol: float, start=None, trials=None):
    """Penalised IRLS; ``trials``: ``y`` are the detected shares of cells of that many samples (binomial)."""
    k = basis.shape[1]
    if start is not None and np.shape(start) == (k,):
        beta = np.array(start, dtype=float)  # warm start (the bootstrap: the full data's coefficients)
    elif trials is not None:
        rate = (np.sum(trials * y) + 0.5) / (trials.sum() + 1.0)
        beta = np.full(k, np.log(rate / (1.0 - rate)))
    else:  # the logit of the smoothed overall rate (never 0 or 1)
        rate = (y.sum() + 0.5) / (y.size + 1.0)
        beta = np.full(k, np.log(rate / (1.0 - rate)))
    dev_old = np.inf
    converged = False
    it = 0
    a = np.eye(k)
    gram = np.zeros((k, k))
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        eta = np.clip(basis @ beta, -ETA_LIMIT, ETA_LIMIT)
        p = expit(eta)
        w = np.maximum(p * (1.0 - p), 1e-10)
        z = eta + (y - p) / w
        if trials is not None:
            w = w * trials
        wb = basis * w[:, None]
        gram = basis.T @ wb
        a = gram + lam * penalty + RIDGE * np.eye(k)
        try:
            beta = np.linalg.solve(a, wb.T @ z)  # K x K, well conditioned by the penalty and ridge
        except np.linalg.LinAlgError as exc:
            raise SplineFitError(f"logistic P-spline: singular normal equations (lambda={lam}): {exc}") from exc
        p = expit(np.clip(basis @ beta, -ETA_LIMIT, ETA_LIMIT))
        dev = _deviance(y, p, trials)
        if abs(dev - dev_old) <= tol * (abs(dev) + 0.1):
            converged = True
            break
        dev_old = dev
    edf = float(np.trace(solve(a, gram, assume_a="pos")))
    return beta, _deviance(y, expit(np.clip(basis @ beta, -ETA_LIMIT, ETA_LIMIT)), trials), edf, it, converged


def _deviance(y: np.ndarray, p: np.ndarray, trials: np.ndarray | None = None) -> float:
    p = np.clip(p, 1e-15, 1.0 - 1e-15)
    terms = y * np.log(p) + (1.0 - y) * np.log1p(-p)
    return float(-2.0 * np.sum(terms if trials is None else trials * terms))  # no BLAS dot: it threads


def fit_logistic_pspline(
    x: np.ndarray,
    detected: np.ndarray,
    lam: float = 0.6,
    n_splines: int = 10,
    degree: int = 3,
    penalty_order: int = 2,
    criterion: LambdaCriterion = "fixed",
    lam_grid: Sequence[float] = DEFAULT_LAMBDA_GRID,
    max_iter: int = 50,
    tol: float = 1e-9,
    start: np.ndarray | None = None,
    trials: np.ndarray | None = None,
) -> LogisticFit:
    """Fit ``p_det`` to 0/1 outcomes ``detected`` at sorted distances ``x`` (see the module docstring).

    ``start``: coefficients to start IRLS from (a nearby fit, e.g. the full data's for a bootstrap resample: ~3
    iterations instead of ~12; the same optimum within ``tol``). ``trials``: cells of that many samples at one
    distance, ``detected`` their detected share (the bootstrap's resamples): the same likelihood as the samples."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(detected, dtype=float)
    t = None if trials is None else np.asarray(trials, dtype=float)
    n = x.size if t is None else round(float(t.sum()))
    if x.shape != y.shape or x.ndim != 1:
        raise SplineFitError(f"x and detected must be 1-D of equal length, got {x.shape} and {y.shape}")
    if n < n_splines:
        raise SplineFitError(f"{n} points are fewer than the {n_splines} spline functions")
    if x[-1] == x[0]:
        raise SplineFitError("all distances are equal; a spline over distance needs at least two distinct values")
    knots = uniform_knots(n_splines, degree)
    u = np.clip((x - x[0]) / (x[-1] - x[0]), 0.0, 1.0)
    basis = design(u, knots, degree).toarray()  # dense n x K: fastest for the IRLS products
    penalty = difference_penalty(n_splines, penalty_order)
    lams = [float(lam)] if criterion == "fixed" else [float(v) for v in lam_grid]
    if not lams or any(not np.isfinite(v) or v < 0 for v in lams):
        raise SplineFitError("lambda must be finite and >= 0 (and the lambda grid non-empty)")
    best = None
    for lam_value in lams:
        beta, dev, edf, it, ok = _irls(basis, y, penalty, lam_value, max_iter, tol, start, t)
        if criterion == "fixed":
            score = 0.0
        elif criterion == "aic":
            score = dev + 2.0 * edf
        elif criterion == "bic":
            score = dev + np.log(n) * edf
        else:
            score = n * dev / max(n - edf, 1e-12) ** 2
        if best is None or score < best[0]:
            best = (score, lam_value, beta, dev, edf, it, ok)
    assert best is not None
    _, chosen, beta, dev, edf, it, ok = best
    return LogisticFit(float(x[0]), float(x[-1]), knots, degree, beta, chosen, edf, dev, n, it, ok)
