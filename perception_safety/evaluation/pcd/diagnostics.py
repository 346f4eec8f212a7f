"""Checks that tell when a PCD number should not be trusted as it stands (warnings of docs/pcd.md).

* `mean_fit_check`: residual structure left by the mean — a badly fitted mean shows up as variance change
  points that are not there (Section 4.2 fits the mean first for exactly this reason);
* `grid_jumps`: grid cells whose PCD is pinned at a variance change point (P(y > y_t) jumps across p_t at the
  sigma discontinuity) or taken at an isolated stretch far beyond where P first fell below p_t.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.pcd.segments import Segment
from perception_safety.evaluation.tail_probabilities import chi2_sf


@dataclass(frozen=True)
class PCDWarning:
    """One warning: a stable ``code`` and a message naming the numbers behind it."""

    code: str
    message: str


@dataclass(frozen=True)
class FitCheck:
    """Residual bin means against 0: ``chi2`` on ``df`` bins and its p-value (small = structure left)."""

    chi2: float
    df: int
    p_value: float


def mean_fit_check(x: np.ndarray, resid: np.ndarray, sigma: np.ndarray, min_bin: int = 30) -> FitCheck | None:
    """Sum of residuals per distance bin (equal counts, at least ``min_bin`` each) standardised by the model's
    sigma; under a well-fitted mean each is ~N(0, 1), so their squares sum to ~chi2(bins) (conservative: the
    spline absorbs part of any structure). None when fewer than 2 bins fit."""
    n = x.size
    bins = min(20, n // max(min_bin, 1))
    if bins < 2:
        return None
    edges = np.linspace(0, n, bins + 1).astype(int)
    var = np.maximum(np.square(sigma), 1e-300)
    sums = np.add.reduceat(resid, edges[:-1])
    variances = np.add.reduceat(var, edges[:-1])
    stat = float(np.sum(np.square(sums) / variances))
    return FitCheck(stat, bins, chi2_sf(stat, bins))


def grid_jumps(
    x: np.ndarray, prob: np.ndarray, p_t: np.ndarray, segment_of: np.ndarray, pcd: np.ndarray, gap_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the grid ``(rows of prob, len(p_t))``: cells whose PCD sample and the next one lie in different
    variance segments (PCD at a change point), and cells whose PCD lies more than ``gap_m`` beyond the first
    sample where P fell to p_t or below (an isolated stretch decides the cell)."""
    n = x.size
    at_cp = np.zeros((prob.shape[0], p_t.size), dtype=bool)
    far = np.zeros_like(at_cp)
    for r in range(prob.shape[0]):
        above = prob[r][None, :] > p_t[:, None]  # (p_t, n)
        any_above = above.any(axis=1)
        last = np.where(any_above, n - 1 - np.argmax(above[:, ::-1], axis=1), -1)
        first_drop = np.where((~above).any(axis=1), np.argmax(~above, axis=1), n)
        ok = (last >= 0) & (last < n - 1)
        nxt = np.minimum(last + 1, n - 1)
        at_cp[r] = ok & (segment_of[np.maximum(last, 0)] != segment_of[nxt])
        drop_x = np.where(first_drop < n, x[np.minimum(first_drop, n - 1)], np.inf)
        far[r] = any_above & (pcd[r] - drop_x > gap_m)
    return at_cp, far


def zero_share_warning(n: int, zeros: int, model: str, threshold: float) -> PCDWarning | None:
    """The share of zero scores (missed targets) and what the chosen model does with it."""
    if zeros == 0:
        return None
    share = zeros / n
    if model == "hurdle":
        msg = (
            f"{zeros} of {n} samples ({100 * share:.1f} %) have y = 0 (target missed): hurdle model, "
            "p_det(x) fitted to detected/missed, the score model to the detected samples only"
        )
    else:
        msg = (
            f"{zeros} of {n} samples ({100 * share:.1f} %) have y = 0 (target missed) and the Gaussian model treats "
            "them as scores: mean, sigma and change points are distorted"
            + (f" (above hurdle_zero_share = {threshold:g}: use model hurdle or auto)" if share > threshold else "")
        )
    return PCDWarning("pcd_zero_share", msg)


def diagnose(
    cfg: PCDConfig,
    xs: np.ndarray,
    resid: np.ndarray,
    sigma: np.ndarray,
    segments: Sequence[Segment],
    model: str,
    n_zero: int,
    x: np.ndarray,
    grid_prob: np.ndarray,
    grid: np.ndarray,
    segment_of: np.ndarray,
) -> tuple[FitCheck | None, list[PCDWarning]]:
    """All warnings of one evaluation: zero share, mean fit, segments near the minimum, jumping grid cells.

    ``xs``/``resid``/``sigma`` are the samples the score model was fitted to (hurdle: the detected ones).
    """
    out: list[PCDWarning] = []
    zw = zero_share_warning(x.size, n_zero, model, cfg.hurdle_zero_share)
    if zw is not None:
        out.append(zw)
    check = mean_fit_check(xs, resid, sigma, min_bin=max(cfg.side_minimum(), 10))
    if check is not None and check.p_value < cfg.fit_check_alpha:
        out.append(
            PCDWarning(
                "pcd_mean_fit",
                f"the P-spline mean leaves structure in the residuals (binned residual sums chi2 = {check.chi2:.1f} "
                f"on {check.df} bins, p = {check.p_value:.2g} < {cfg.fit_check_alpha:g}): a poorly fitted mean "
                "produces false variance change points; try lam_selection: gcv or more n_splines",
            )
        )
    if cfg.method == "paper" and len(segments) > 1:
        floor = cfg.side_minimum()
        small = [s for s in segments if s.n < 1.5 * floor]
        if small:
            desc = ", ".join(f"[{s.lo_m:.1f}, {s.hi_m:.1f}] m: n = {s.n}" for s in small)
            out.append(
                PCDWarning(
                    "pcd_small_segment",
                    f"{len(small)} variance segment(s) near the minimum of {floor} samples (sigma from few "
                    f"residuals): {desc}",
                )
            )
    at_cp, far = grid_jumps(x, grid_prob, np.asarray(cfg.grid_p_t, dtype=float), segment_of, grid,
                            gap_m=0.1 * float(x[-1] - x[0]))
    if at_cp.any():
        cells = _cells(cfg, at_cp)
        out.append(
            PCDWarning(
                "pcd_grid_at_change_point",
                f"{int(at_cp.sum())} grid cell(s) have their PCD at a variance change point, where P(y > y_t) jumps "
                f"across p_t with sigma (the value moves with the change point): {cells}",
            )
        )
    if far.any():
        out.append(
            PCDWarning(
                "pcd_grid_jump",
                f"{int(far.sum())} grid cell(s) take their PCD from an isolated stretch more than "
                f"{0.1 * float(x[-1] - x[0]):.1f} m beyond the first distance where P fell to p_t: {_cells(cfg, far)}",
            )
        )
    return check, out


def _cells(cfg: PCDConfig, mask: np.ndarray, limit: int = 6) -> str:
    idx = list(zip(*np.nonzero(mask), strict=True))
    text = ", ".join(f"(y_t={cfg.grid_y_t[i]:g}, p_t={cfg.grid_p_t[j]:g})" for i, j in idx[:limit])
    return text + (f" and {len(idx) - limit} more" if len(idx) > limit else "")
