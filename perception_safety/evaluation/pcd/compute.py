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
from typing import Any

import numpy as np
from scipy.special import ndtr

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.pcd.changepoints import ChangePoints, binary_segmentation
from perception_safety.evaluation.pcd.config import (
    DEFAULT_GRID,
    DEFAULT_MIN_SEGMENT,
    Method,
    PCDBootstrapConfig,
    PCDConfig,
    PCDSampleConfig,
)
from perception_safety.evaluation.pcd.diagnostics import FitCheck, PCDWarning
from perception_safety.evaluation.pcd.diagnostics import diagnose as run_checks
from perception_safety.evaluation.pcd.logistic import LogisticFit
from perception_safety.evaluation.pcd.pspline import (
    PYGAM_RIDGE,
    PSplineFit,
    SplineFitError,
    fit_pspline,
    fitted_values,
)

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_MIN_SEGMENT",
    "Method",
    "PCDBootstrapConfig",
    "PCDConfig",
    "PCDError",
    "PCDResult",
    "PCDSampleConfig",
    "Segment",
    "compute_pcd",
    "exceedance_probability",
    "pcd_at",
    "pcd_from_probabilities",
]

class PCDError(PerceptionSafetyError):
    """The samples cannot give a PCD (too few, non-finite, degenerate); the message says why."""


@dataclass(frozen=True)
class Segment:
    """One variance segment: distance bounds, sample count and its sigma."""

    lo_m: float
    hi_m: float
    n: int
    sigma: float


@dataclass(frozen=True)
class PCDInterval:
    """Bootstrap percentile intervals (see `bootstrap.bootstrap_pcd`): resampled whole groups, seeded."""

    n_boot: int
    n_ok: int
    unit: str
    n_groups: int
    level: float
    seed: int
    pcd_ci: tuple[float, float]
    mpcd_ci: tuple[float, float]
    grid_lo: np.ndarray
    grid_hi: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_boot": self.n_boot,
            "n_ok": self.n_ok,
            "unit": self.unit,
            "n_groups": self.n_groups,
            "level": self.level,
            "seed": self.seed,
            "method": "percentile bootstrap over whole resampling units (model fixed to the full-data choice)",
        }


@dataclass(frozen=True)
class PCDResult:
    """Everything one PCD evaluation produced (distances in metres).

    ``fitted``/``sigma`` are the score model's mean and sigma at every sample distance (hurdle: of the detected
    scores, evaluated at all distances); ``p_det`` the detection probability there (None for the Gaussian model).
    """

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
    model: str = "gaussian"
    model_choice: str = ""
    p_det: np.ndarray | None = None
    logistic: LogisticFit | None = None
    warnings: tuple[PCDWarning, ...] = field(default=())
    fit_check: FitCheck | None = None
    interval: PCDInterval | None = None

    @property
    def mpcd(self) -> float:
        """Mean PCD over the (y_t, p_t) grid."""
        return float(np.mean(self.grid))

    @property
    def n_zero(self) -> int:
        """Samples with y = 0 (target missed)."""
        return int(np.count_nonzero(self.y == 0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-sample arrays)."""
        grid: dict[str, Any] = {
            "y_t": list(self.grid_y_t),
            "p_t": list(self.grid_p_t),
            "pcd": self.grid.tolist(),
            "reached": self.grid_reached.tolist(),
        }
        out: dict[str, Any] = {
            "method": self.method,
            "model": self.model,
            "model_choice": self.model_choice,
            "n": int(self.x.size),
            "n_zero": self.n_zero,
            "zero_share": self.n_zero / max(int(self.x.size), 1),
            "distance_range_m": [float(self.x[0]), float(self.x[-1])],
            "lambda": self.spline.lam,
            "edf": self.spline.edf,
            "change_points": list(self.change_points.distances),
            "segments": [{"lo_m": s.lo_m, "hi_m": s.hi_m, "n": s.n, "sigma": s.sigma} for s in self.segments],
            "pcd": {"y_t": self.y_t, "p_t": self.p_t, "value": self.pcd},
            "grid": grid,
            "mpcd": self.mpcd,
            "mpcd_definition": "arithmetic mean of grid.pcd over all (y_t, p_t) cells; "
            "a cell where no sample meets the threshold counts as 0 m",
            "notes": list(self.notes),
            "warnings": [{"code": w.code, "message": w.message} for w in self.warnings],
        }
        if self.logistic is not None:
            lf = self.logistic
            out["p_det"] = {"lambda": lf.lam, "edf": lf.edf, "deviance": lf.deviance, "converged": lf.converged}
        if self.fit_check is not None:
            fc = self.fit_check
            out["mean_fit_check"] = {"chi2": fc.chi2, "bins": fc.df, "p_value": fc.p_value}
        if self.interval is not None:
            iv = self.interval
            out["pcd_ci"] = list(iv.pcd_ci)
            out["mpcd_ci"] = list(iv.mpcd_ci)
            out["pcd"]["lower"], out["pcd"]["upper"] = iv.pcd_ci
            grid["lower"] = iv.grid_lo.tolist()
            grid["upper"] = iv.grid_hi.tolist()
            out["bootstrap"] = iv.to_dict()
        return out


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


def probability_grid(result: PCDResult, y_t: np.ndarray) -> np.ndarray:
    """``P(y > y_t | x_i)`` at every sample distance for each ``y_t`` (rows): eq. 9 for the Gaussian model,
    ``p_det(x) P(y > y_t | detected, x) + (1 - p_det(x)) [y_t < 0]`` for the hurdle model."""
    y_t = np.atleast_1d(np.asarray(y_t, dtype=float))
    if result.method == "reference" and not result.change_points.distances and result.sigma[0] == 0:
        return np.ones((y_t.size, result.x.size))
    prob = exceedance_probability(result.fitted, result.sigma, y_t, result.method)  # type: ignore[arg-type]
    if result.p_det is None:
        return prob
    p = result.p_det[None, :]
    return p * prob + (1.0 - p) * (y_t[:, None] < 0.0)


def pcd_at(result: PCDResult, y_t: float, p_t: float) -> float:
    """PCD of a computed result for one more threshold pair (eq. 10)."""
    prob = probability_grid(result, np.array([y_t]))
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
class _ScoreModel:
    """The Gaussian part fitted to (xs, ys): spline, change points, segments, per-sample sigma."""

    xs: np.ndarray
    ys: np.ndarray
    fit: PSplineFit
    cps: ChangePoints
    segments: tuple[Segment, ...]
    sigma: np.ndarray


def _score_model(
    xs: np.ndarray, ys: np.ndarray, cfg: PCDConfig, what: str, change_points: Sequence[float] | None
) -> _ScoreModel:
    kwargs = _spline_kwargs(cfg)
    try:
        fit = fit_pspline(xs, ys, **kwargs)
        seg_kwargs = dict(kwargs, criterion="fixed", lam=fit.lam)

        def residuals(xa: np.ndarray, ya: np.ndarray) -> np.ndarray:
            seg_fit = fit if xa.size == xs.size else fit_pspline(xa, ya, **seg_kwargs)
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
            )
        )
    except SplineFitError as exc:
        raise PCDError(f"{what}: {exc}") from exc
    if cfg.method == "paper":
        sigma, segs = _segments_paper(xs, ys - fitted_values(fit, xs), cps)
    else:
        sigma, segs = _segments_reference(xs, ys, cps)
    return _ScoreModel(xs, ys, fit, cps, tuple(segs), sigma)


def compute_pcd(
    x: np.ndarray,
    y: np.ndarray,
    config: PCDConfig | None = None,
    what: str = "samples",
    change_points: Sequence[float] | None = None,
    diagnose: bool = True,
) -> PCDResult:
    """Full PCD evaluation of samples ``(distance, y)``; raises `PCDError` on unusable input.

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
            )
        except SplineFitError as exc:
            raise PCDError(f"{what}: detection probability: {exc}") from exc
        p_det = logistic.predict(x)
        sm = _score_model(xd, y[detected], cfg, what, change_points)
        fitted = fitted_values(sm.fit, x)
        seg_sigma = np.array([s.sigma for s in sm.segments])
        sigma = seg_sigma[_segment_of(x, sm.cps)]
    else:
        sm = _score_model(x, y, cfg, what, change_points)
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
            x, grid_prob, grid, _segment_of(x, sm.cps),
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


def _segment_of(x: np.ndarray, cps: ChangePoints) -> np.ndarray:
    """Variance segment index of each distance (a change point is the last distance of its left segment)."""
    return np.searchsorted(np.asarray(cps.distances, dtype=float), x, side="left")
