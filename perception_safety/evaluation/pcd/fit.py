"""Fitting the score model of PCD: samples validated and sorted, the P-spline mean (PCD paper, eq. 2-4), variance
change points (eq. 5-8) and per-segment sigma; the choice between the Gaussian and the hurdle model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perception_safety.evaluation.pcd.changepoints import ChangePoints, binary_segmentation
from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.pcd.errors import PCDError
from perception_safety.evaluation.pcd.pspline import PYGAM_RIDGE, PSplineFit, SplineFitError, fit_pspline, fitted_values
from perception_safety.evaluation.pcd.segments import Segment, given_change_points, segments_paper, segments_reference


def prepare_samples(x: np.ndarray, y: np.ndarray, what: str = "samples") -> tuple[np.ndarray, np.ndarray]:
    """Validate and sort (stably) by distance; raises `PCDError` naming the first bad sample."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size != y.size:
        raise PCDError(f"{what}: {x.size} distances but {y.size} scores")
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PCDError(f"{what}: sample {i} is not finite (distance={x[i]}, y={y[i]}); {int(bad.sum())} such samples")
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def spline_kwargs(cfg: PCDConfig) -> dict[str, Any]:
    ref = cfg.method == "reference"
    return {
        "lam": cfg.lam,
        "n_splines": cfg.n_splines,
        "degree": cfg.spline_degree,
        "penalty_order": cfg.penalty_order,
        "intercept": ref,
        "ridge": PYGAM_RIDGE if ref else 0.0,
        "last_knot_eps": 1e-9 if ref else 0.0,
        "criterion": cfg.lam_selection,
        "lam_grid": cfg.lam_grid,
    }


def resolve_model(cfg: PCDConfig, zero_share: float) -> tuple[str, str]:
    """The score model to use and why (auto: hurdle when the share of zero scores exceeds the configured one)."""
    if cfg.model != "auto":
        return cfg.model, f"model {cfg.model} (configured)"
    if cfg.method == "reference":
        return "gaussian", "auto: gaussian (reference mode reproduces the Gaussian model only)"
    share = f"{100 * zero_share:.1f} %"
    limit = f"hurdle_zero_share = {100 * cfg.hurdle_zero_share:g} %"
    if zero_share > cfg.hurdle_zero_share:
        return "hurdle", f"auto: hurdle ({share} zero scores > {limit})"
    return "gaussian", f"auto: gaussian ({share} zero scores <= {limit})"


@dataclass(frozen=True)
class CellSums:
    """Samples pooled in cells at distinct distances: per cell the count and the sum of squares about the cell's
    mean score; ``y_scale`` the samples' largest ``|y|`` (the exact-fit floor of the change-point test)."""

    counts: np.ndarray
    within: np.ndarray
    y_scale: float


@dataclass(frozen=True)
class ScoreModel:
    """The Gaussian part fitted to (xs, ys): spline, change points, segments, per-sample sigma."""

    xs: np.ndarray
    ys: np.ndarray
    fit: PSplineFit
    cps: ChangePoints
    segments: tuple[Segment, ...]
    sigma: np.ndarray


def fit_score_model(
    xs: np.ndarray,
    ys: np.ndarray,
    cfg: PCDConfig,
    what: str,
    change_points: Sequence[float] | None,
    cells: CellSums | None = None,
) -> ScoreModel:
    """The Gaussian part on samples ``(xs, ys)``, or on cells (``cells``: ``ys`` are the cells' mean scores; the
    bootstrap's resamples, paper method): the same fit, test and sigma as on the cells' samples."""
    kwargs = spline_kwargs(cfg)
    counts = None if cells is None else cells.counts
    within = None if cells is None else cells.within
    try:
        fit = fit_pspline(xs, ys, weights=counts, rss_offset=0.0 if within is None else float(within.sum()), **kwargs)
        seg_kwargs = dict(kwargs, criterion="fixed", lam=fit.lam)

        def residuals(xa: np.ndarray, ya: np.ndarray, wa: np.ndarray | None = None) -> np.ndarray:
            seg_fit = fit if xa.size == xs.size else fit_pspline(xa, ya, weights=wa, with_edf=False, **seg_kwargs)
            return ya - fitted_values(seg_fit, xa)

        cps = (
            given_change_points(xs, change_points, cfg.method)
            if change_points is not None
            else binary_segmentation(
                xs,
                ys,
                residuals,
                alpha=cfg.alpha,
                rule=cfg.method,
                min_segment_size=max(cfg.segment_minimum(), cfg.n_splines),
                min_side=cfg.side_minimum(),
                counts=counts,
                within=within,
                y_scale=None if cells is None else cells.y_scale,
            )
        )
    except SplineFitError as exc:
        raise PCDError(f"{what}: {exc}") from exc
    if cfg.method == "paper":
        sigma, segs = segments_paper(xs, ys - fitted_values(fit, xs), cps, counts, within)
    else:
        sigma, segs = segments_reference(xs, ys, cps)
    return ScoreModel(xs, ys, fit, cps, tuple(segs), sigma)
