"""Perception Characteristics Distance (PCD, eq. 9–10) and mPCD over a (y_t, p_t) grid.

Pipeline on samples sorted by distance
(``fit``: samples and score model; ``segments``: variance segments; ``grid``: probabilities and the PCD grid;
``result``: the values; this module runs them in order): P-spline mean ``f`` (eq. 2–4), variance change points by
binary segmentation (eq. 5–8), per-segment ``sigma``, ``P(y_i > y_t)`` under ``N(f(x_i), sigma_i^2)``
(eq. 9) and ``PCD = max{x_i : P(y_i > y_t) > p_t}`` (eq. 10). ``mPCD`` is the arithmetic mean of the
PCD grid (the volume under the PCD surface divided by the number of grid cells).

``method="paper"`` follows the paper; ``method="reference"`` reproduces the public reference
implementation number for number (see docs/pcd.md for every difference).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception_safety.evaluation.pcd.config import (
    DEFAULT_GRID,
    DEFAULT_MIN_SEGMENT,
    Method,
    PCDBootstrapConfig,
    PCDConfig,
    PCDSampleConfig,
)
from perception_safety.evaluation.pcd.diagnostics import PCDWarning
from perception_safety.evaluation.pcd.diagnostics import diagnose as run_checks
from perception_safety.evaluation.pcd.errors import PCDError
from perception_safety.evaluation.pcd.fit import fit_score_model, prepare_samples, resolve_model
from perception_safety.evaluation.pcd.grid import (
    exceedance_probability,
    pcd_at,
    pcd_from_probabilities,
    probability_grid,
)
from perception_safety.evaluation.pcd.pspline import SplineFitError, fitted_values
from perception_safety.evaluation.pcd.result import PCDInterval, PCDResult
from perception_safety.evaluation.pcd.segments import Segment, segment_of

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_MIN_SEGMENT",
    "Method",
    "PCDBootstrapConfig",
    "PCDConfig",
    "PCDError",
    "PCDInterval",
    "PCDResult",
    "PCDSampleConfig",
    "Segment",
    "compute_pcd",
    "exceedance_probability",
    "pcd_at",
    "pcd_from_probabilities",
    "prepare_samples",
    "probability_grid",
]


def compute_pcd(
    x: np.ndarray,
    y: np.ndarray,
    config: PCDConfig | None = None,
    what: str = "samples",
    change_points: Sequence[float] | None = None,
    diagnose: bool = True,
    start: PCDResult | None = None,
) -> PCDResult:
    """Full PCD evaluation of samples ``(distance, y)``; raises `PCDError` on unusable input.

    ``start``: a result on nearby data (the bootstrap's full-data estimate) whose p_det coefficients start the
    IRLS (same optimum within its tolerance, a quarter of the iterations).
    ``change_points`` (distances) skips the change-point search and uses these instead; ``diagnose=False``
    skips the warnings' checks (the bootstrap's resamples).
    """
    from perception_safety.evaluation.pcd.logistic import fit_logistic_pspline

    cfg = config or PCDConfig()
    x, y = prepare_samples(x, y, what)
    notes: list[str] = []
    warns: list[PCDWarning] = []
    if x.size < cfg.n_splines:
        raise PCDError(f"{what}: {x.size} samples are fewer than the {cfg.n_splines} spline functions")
    if x[-1] == x[0]:
        raise PCDError(f"{what}: all {x.size} samples share the distance {x[0]} m; PCD needs a range of distances")
    if np.all(y == 0):
        notes.append("all scores are 0 (target never detected): no change points, PCD 0 everywhere")
    elif np.all(y == y[0]):
        notes.append(f"all scores equal {y[0]}: no change points, sigma 0")
    n_distinct = int(np.count_nonzero(np.diff(x)) + 1)
    if n_distinct < x.size:
        notes.append(f"{x.size - n_distinct} samples share a distance with another sample")
    detected = y > 0
    n_zero = int(x.size - np.count_nonzero(detected))
    model, choice = resolve_model(cfg, n_zero / x.size)
    xd = x[detected]
    if model == "hurdle" and (xd.size < cfg.n_splines or xd[-1] == xd[0] or n_zero == 0):
        why = "no zero scores" if n_zero == 0 else f"only {xd.size} detected samples"
        choice += f"; fell back to gaussian ({why}: the score model cannot be fitted on detected samples alone)"
        if n_zero:
            warns.append(PCDWarning("pcd_hurdle_fallback", f"hurdle model impossible, {why}: Gaussian model used"))
        model = "gaussian"
    p_det = None
    logistic = None
    if model == "hurdle":
        try:
            logistic = fit_logistic_pspline(
                x,
                detected,
                lam=cfg.lam,
                n_splines=cfg.n_splines,
                degree=cfg.spline_degree,
                penalty_order=cfg.penalty_order,
                criterion=cfg.lam_selection,
                lam_grid=cfg.lam_grid,
                start=start.logistic.coef if start is not None and start.logistic is not None else None,
            )
        except SplineFitError as exc:
            raise PCDError(f"{what}: detection probability: {exc}") from exc
        p_det = logistic.predict(x)
        sm = fit_score_model(xd, y[detected], cfg, what, change_points)
        fitted = fitted_values(sm.fit, x)
        seg_sigma = np.array([s.sigma for s in sm.segments])
        sigma = seg_sigma[segment_of(x, sm.cps)]
    else:
        sm = fit_score_model(x, y, cfg, what, change_points)
        fitted = fitted_values(sm.fit, x)
        sigma = sm.sigma
    partial = PCDResult(
        method=cfg.method,
        x=x,
        y=y,
        fitted=fitted,
        sigma=sigma,
        spline=sm.fit,
        change_points=sm.cps,
        segments=sm.segments,
        y_t=cfg.y_t,
        p_t=cfg.p_t,
        pcd=0.0,
        grid_y_t=tuple(cfg.grid_y_t),
        grid_p_t=tuple(cfg.grid_p_t),
        grid=np.zeros((0, 0)),
        grid_reached=np.zeros((0, 0), dtype=bool),
        model=model,
        model_choice=choice,
        p_det=p_det,
        logistic=logistic,
    )
    if cfg.method == "reference" and not sm.cps.distances and sigma[0] == 0:
        notes.append("reference rule: sigma 0 without change points gives P = 1 at every distance")
    grid_prob = probability_grid(partial, np.array(cfg.grid_y_t))
    point_prob = probability_grid(partial, np.array([cfg.y_t]))
    grid, reached = pcd_from_probabilities(x, grid_prob, np.array(cfg.grid_p_t), cfg.method)
    point, _ = pcd_from_probabilities(x, point_prob, np.array([cfg.p_t]), cfg.method)
    if not reached.all():
        notes.append(f"{int((~reached).sum())} grid cells: no distance meets the threshold (PCD reported as 0 m)")
    fit_check = None
    if diagnose:
        fit_check, more = run_checks(
            cfg, sm.xs, sm.ys - fitted_values(sm.fit, sm.xs), sm.sigma, sm.segments, model, n_zero,
            x, grid_prob, grid, segment_of(x, sm.cps),
        )
        warns.extend(more)
    return PCDResult(
        **{
            **partial.__dict__,
            "pcd": float(point[0, 0]),
            "grid": grid,
            "grid_reached": reached,
            "notes": tuple(notes),
            "warnings": tuple(warns),
            "fit_check": fit_check,
        }
    )
