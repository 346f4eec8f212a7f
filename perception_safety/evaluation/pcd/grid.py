"""From a fitted score model to PCD: ``P(y > y_t | x)`` (PCD paper, eq. 9; hurdle: times p_det), the largest
distance meeting ``p_t`` (eq. 10), vectorised over the (y_t, p_t) grid that mPCD averages."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from perception_safety.evaluation.pcd.config import Method
from perception_safety.evaluation.pcd.result import PCDResult


def exceedance_probability(fitted: np.ndarray, sigma: np.ndarray, y_t: np.ndarray, method: Method) -> np.ndarray:
    """``P(y_i > y_t)`` under ``N(f(x_i), sigma_i^2)`` (eq. 9); shape ``(len(y_t), n)``.

    sigma = 0: paper mode uses the degenerate law (1 if f > y_t else 0); reference mode uses
    sigma = 1e-10 when change points exist and P = 1 everywhere when none exist, as the reference does.
    """
    y_t = np.atleast_1d(np.asarray(y_t, dtype=float))[:, None]
    f = fitted[None, :]
    s = sigma[None, :]
    if method == "reference":
        safe = np.where(s > 0, s, 1e-10)
        return 1.0 - ndtr((y_t - f) / safe)
    pos = s > 0
    z = np.divide(f - y_t, s, out=np.zeros(np.broadcast_shapes(f.shape, y_t.shape)), where=pos)
    return np.where(pos, ndtr(z), (f > y_t).astype(float))


def pcd_from_probabilities(x: np.ndarray, prob: np.ndarray, p_t: np.ndarray, method: Method):
    """Largest ``x_i`` with ``P > p_t`` (paper) or ``P >= p_t`` (reference), vectorised over rows of ``prob``.

    Returns ``(pcd, reached)`` of shape ``(rows, len(p_t))``; 0 m where no sample qualifies.
    """
    p_t = np.atleast_1d(np.asarray(p_t, dtype=float))
    n = x.size
    # suffix maxima: the last index with P >= p equals the last index whose suffix maximum is >= p
    suffix = np.maximum.accumulate(prob[:, ::-1], axis=1)[:, ::-1]
    neg = -suffix  # non-decreasing along axis 1
    out = np.zeros((prob.shape[0], p_t.size))
    reached = np.zeros_like(out, dtype=bool)
    side = "left" if method == "paper" else "right"
    for r in range(prob.shape[0]):
        # paper: count of i with suffix > p  = searchsorted(-suffix, -p, 'left'); reference: >= -> 'right'
        count = np.searchsorted(neg[r], -p_t, side=side)
        ok = count > 0
        out[r, ok] = x[np.minimum(count[ok], n) - 1]
        reached[r] = ok
    return out, reached


def probability_grid(result: PCDResult, y_t: np.ndarray) -> np.ndarray:
    """``P(y > y_t | x_i)`` at every sample distance for each ``y_t`` (rows): eq. 9 for the Gaussian model,
    ``p_det(x) P(y > y_t | detected, x) + (1 - p_det(x)) [y_t < 0]`` for the hurdle model."""
    y_t = np.atleast_1d(np.asarray(y_t, dtype=float))
    if result.method == "reference" and not result.change_points.distances and result.sigma[0] == 0:
        return np.ones((y_t.size, result.x.size))
    return model_probabilities(result.fitted, result.sigma, result.p_det, y_t, result.method)  # type: ignore[arg-type]


def model_probabilities(
    fitted: np.ndarray, sigma: np.ndarray, p_det: np.ndarray | None, y_t: np.ndarray, method: Method
) -> np.ndarray:
    """``P(y > y_t | x)`` rows per ``y_t``: eq. 9, times ``p_det`` for the hurdle model (a miss scores 0)."""
    prob = exceedance_probability(fitted, sigma, y_t, method)
    if p_det is None:
        return prob
    p = p_det[None, :]
    return p * prob + (1.0 - p) * (y_t[:, None] < 0.0)


def pcd_at(result: PCDResult, y_t: float, p_t: float) -> float:
    """PCD of a computed result for one more threshold pair (eq. 10)."""
    prob = probability_grid(result, np.array([y_t]))
    values, _ = pcd_from_probabilities(result.x, prob, np.array([p_t]), result.method)  # type: ignore[arg-type]
    return float(values[0, 0])
