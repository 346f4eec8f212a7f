"""Perception Characteristics Distance (PCD, eq. 9–10) and mPCD over a (y_t, p_t) grid.

Pipeline on samples sorted by distance: P-spline mean ``f`` (eq. 2–4), variance change points by
binary segmentation (eq. 5–8), per-segment ``sigma``, ``P(y_i > y_t)`` under ``N(f(x_i), sigma_i^2)``
(eq. 9) and ``PCD = max{x_i : P(y_i > y_t) > p_t}`` (eq. 10). ``mPCD`` is the arithmetic mean of the
PCD grid (the volume under the PCD surface divided by the number of grid cells).

``method="paper"`` follows the paper; ``method="reference"`` reproduces the public reference
implementation number for number (see docs/pcd.md for every difference).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from scipy.special import ndtr

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.pcd.changepoints import ChangePoints, binary_segmentation
from perception_safety.evaluation.pcd.pspline import (
    DEFAULT_LAMBDA_GRID,
    PYGAM_RIDGE,
    PSplineFit,
    SplineFitError,
    fit_pspline,
    fitted_values,
)

Method = Literal["paper", "reference"]
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.1 * i, 10) for i in range(1, 10))
#: Segments shorter than this are not tested for a further change point (per method).
DEFAULT_MIN_SEGMENT = {"paper": 30, "reference": 130}


class PCDError(PerceptionSafetyError):
    """The samples cannot give a PCD (too few, non-finite, degenerate); the message says why."""


class PCDSampleConfig(BaseModel):
    """How samples are extracted from Frames (ignored for CSV input)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    class_id: str | None = None
    track_id: str | None = None
    iou_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    class_aware: bool = False


class PCDConfig(BaseModel):
    """The ``pcd`` config section (defaults = the paper's settings)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    method: Method = "paper"
    n_splines: int = Field(default=10, ge=4)
    spline_degree: int = Field(default=3, ge=1, le=5)
    penalty_order: int = Field(default=2, ge=1)
    lam: float = Field(default=0.6, ge=0.0, allow_inf_nan=False)
    lam_selection: Literal["fixed", "aic", "bic", "gcv"] = "fixed"
    lam_grid: tuple[float, ...] = DEFAULT_LAMBDA_GRID
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_segment_size: int | None = Field(default=None, ge=3)
    min_side: int = Field(default=2, ge=1)
    y_t: float = Field(default=0.5, allow_inf_nan=False)
    p_t: float = Field(default=0.5, ge=0.0, le=1.0)
    grid_y_t: tuple[float, ...] = DEFAULT_GRID
    grid_p_t: tuple[float, ...] = DEFAULT_GRID
    samples: PCDSampleConfig = PCDSampleConfig()

    @field_validator("grid_y_t", "grid_p_t", "lam_grid")
    @classmethod
    def _non_empty_finite(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if len(v) == 0 or not all(np.isfinite(v)):
            raise ValueError("must be a non-empty list of finite numbers")
        return v

    @model_validator(mode="after")
    def _reference_is_fixed(self) -> PCDConfig:
        if self.method == "reference" and self.lam_selection != "fixed":
            raise ValueError("method 'reference' fits with a fixed lambda (lam_selection must be 'fixed')")
        if self.penalty_order >= self.n_splines:
            raise ValueError("penalty_order must be smaller than n_splines")
        return self

    def segment_minimum(self) -> int:
        """The effective minimum size of a segment to be tested."""
        if self.min_segment_size is not None:
            return self.min_segment_size
        return DEFAULT_MIN_SEGMENT[self.method]


@dataclass(frozen=True)
class Segment:
    """One variance segment: distance bounds, sample count and its sigma."""

    lo_m: float
    hi_m: float
    n: int
    sigma: float


@dataclass(frozen=True)
class PCDResult:
    """Everything one PCD evaluation produced (distances in metres)."""

    method: str
    x: np.ndarray
    y: np.ndarray
    fitted: np.ndarray
    sigma: np.ndarray  # per sample
    spline: PSplineFit
    change_points: ChangePoints
    segments: tuple[Segment, ...]
    y_t: float
    p_t: float
    pcd: float
    grid_y_t: tuple[float, ...]
    grid_p_t: tuple[float, ...]
    grid: np.ndarray  # rows y_t, columns p_t
    grid_reached: np.ndarray  # False where no sample met the probability threshold (PCD reported as 0)
    notes: tuple[str, ...] = field(default=())

    @property
    def mpcd(self) -> float:
        """Mean PCD over the (y_t, p_t) grid."""
        return float(np.mean(self.grid))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-sample arrays)."""
        return {
            "method": self.method,
            "n": int(self.x.size),
            "distance_range_m": [float(self.x[0]), float(self.x[-1])],
            "lambda": self.spline.lam,
            "edf": self.spline.edf,
            "change_points": list(self.change_points.distances),
            "segments": [{"lo_m": s.lo_m, "hi_m": s.hi_m, "n": s.n, "sigma": s.sigma} for s in self.segments],
            "pcd": {"y_t": self.y_t, "p_t": self.p_t, "value": self.pcd},
            "grid": {
                "y_t": list(self.grid_y_t),
                "p_t": list(self.grid_p_t),
                "pcd": self.grid.tolist(),
                "reached": self.grid_reached.tolist(),
            },
            "mpcd": self.mpcd,
            "mpcd_definition": "arithmetic mean of grid.pcd over all (y_t, p_t) cells; "
            "a cell where no sample meets the threshold counts as 0 m",
            "notes": list(self.notes),
        }


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


def _spline_kwargs(cfg: PCDConfig) -> dict[str, Any]:
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


def _segments_paper(x: np.ndarray, resid: np.ndarray, cps: ChangePoints) -> tuple[np.ndarray, list[Segment]]:
    bounds = [0, *cps.split_indices, x.size]
    sigma = np.empty(x.size)
    segs = []
    for lo, hi in itertools.pairwise(bounds):
        s = float(np.sqrt(np.mean(np.square(resid[lo:hi]))))
        sigma[lo:hi] = s
        segs.append(Segment(float(x[lo]), float(x[hi - 1]), hi - lo, s))
    return sigma, segs


def _segments_reference(x: np.ndarray, y: np.ndarray, cps: ChangePoints) -> tuple[np.ndarray, list[Segment]]:
    c = list(cps.distances)
    if not c:
        s = float(np.std(y))
        return np.full(x.size, s), [Segment(float(x[0]), float(x[-1]), x.size, s)]
    masks = [x <= c[0]]
    masks += [(x >= a) & (x <= b) for a, b in itertools.pairwise(c)]
    masks.append(x >= c[-1])
    sigma = np.full(x.size, np.nan)
    segs = []
    for mask in masks:
        if not mask.any():
            continue
        s = float(np.std(y[mask]))
        sigma[mask] = s  # later segments overwrite shared boundary samples, as the reference does
        segs.append(Segment(float(x[mask][0]), float(x[mask][-1]), int(mask.sum()), s))
    return sigma, segs


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


def pcd_at(result: PCDResult, y_t: float, p_t: float) -> float:
    """PCD of a computed result for one more threshold pair (eq. 10)."""
    prob = exceedance_probability(result.fitted, result.sigma, np.array([y_t]), result.method)  # type: ignore[arg-type]
    values, _ = pcd_from_probabilities(result.x, prob, np.array([p_t]), result.method)  # type: ignore[arg-type]
    return float(values[0, 0])


def given_change_points(x: np.ndarray, distances: Sequence[float], method: Method) -> ChangePoints:
    """Change points supplied by the user (distances), as the segmentation of sorted ``x`` would report them.

    Paper: a change point is the last distance of its left segment; reference: the first of its right one.
    """
    values = sorted(float(d) for d in distances)
    if not all(np.isfinite(values)):
        raise PCDError("change points must be finite distances")
    side = "right" if method == "paper" else "left"
    cuts = sorted({int(np.searchsorted(x, v, side=side)) for v in values} - {0, x.size})
    return ChangePoints(split_indices=tuple(cuts), distances=tuple(values), tests=())


def compute_pcd(
    x: np.ndarray,
    y: np.ndarray,
    config: PCDConfig | None = None,
    what: str = "samples",
    change_points: Sequence[float] | None = None,
) -> PCDResult:
    """Full PCD evaluation of samples ``(distance, y)``; raises `PCDError` on unusable input.

    ``change_points`` (distances) skips the change-point search and uses these instead.
    """
    cfg = config or PCDConfig()
    x, y = prepare_samples(x, y, what)
    notes: list[str] = []
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
    kwargs = _spline_kwargs(cfg)
    try:
        fit = fit_pspline(x, y, **kwargs)
        seg_kwargs = dict(kwargs, criterion="fixed", lam=fit.lam)

        def residuals(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
            seg_fit = fit if xs.size == x.size else fit_pspline(xs, ys, **seg_kwargs)
            return ys - fitted_values(seg_fit, xs)

        cps = (
            given_change_points(x, change_points, cfg.method)
            if change_points is not None
            else binary_segmentation(
                x,
                y,
                residuals,
                alpha=cfg.alpha,
                rule=cfg.method,
                min_segment_size=max(cfg.segment_minimum(), cfg.n_splines),
                min_side=cfg.min_side,
            )
        )
    except SplineFitError as exc:
        raise PCDError(f"{what}: {exc}") from exc
    fitted = fitted_values(fit, x)
    if cfg.method == "paper":
        sigma, segs = _segments_paper(x, y - fitted, cps)
    else:
        sigma, segs = _segments_reference(x, y, cps)
    if cfg.method == "reference" and not cps.distances and sigma[0] == 0:
        grid_prob = np.ones((len(cfg.grid_y_t), x.size))
        point_prob = np.ones((1, x.size))
        notes.append("reference rule: sigma 0 without change points gives P = 1 at every distance")
    else:
        grid_prob = exceedance_probability(fitted, sigma, np.array(cfg.grid_y_t), cfg.method)
        point_prob = exceedance_probability(fitted, sigma, np.array([cfg.y_t]), cfg.method)
    grid, reached = pcd_from_probabilities(x, grid_prob, np.array(cfg.grid_p_t), cfg.method)
    point, _ = pcd_from_probabilities(x, point_prob, np.array([cfg.p_t]), cfg.method)
    if not reached.all():
        notes.append(f"{int((~reached).sum())} grid cells: no distance meets the threshold (PCD reported as 0 m)")
    return PCDResult(
        method=cfg.method,
        x=x,
        y=y,
        fitted=fitted,
        sigma=sigma,
        spline=fit,
        change_points=cps,
        segments=tuple(segs),
        y_t=cfg.y_t,
        p_t=cfg.p_t,
        pcd=float(point[0, 0]),
        grid_y_t=tuple(cfg.grid_y_t),
        grid_p_t=tuple(cfg.grid_p_t),
        grid=grid,
        grid_reached=reached,
        notes=tuple(notes),
    )
