"""PCD figures: samples with spline, ±sigma band, change points and PCD (paper Fig. 3–5); PCD surface (Fig. 6).

Several inputs are drawn side by side in one figure so conditions (clear vs rain) or detectors compare directly.
Uses matplotlib's object API with the Agg canvas (no pyplot state, no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perception_safety.evaluation.pcd.compute import PCDResult
from perception_safety.report.figure_save import Margins, fixed_grid, save_figure


def draw_fit(ax: Axes, result: PCDResult, title: str = "") -> None:
    """Scatter of y vs distance, P-spline mean, ±sigma band, change points and the PCD at (y_t, p_t).

    Hurdle model: zeros drawn apart, the mean/band are the detected scores' and ``p_det(x)`` is drawn too;
    with a bootstrap interval the PCD's interval is shaded.
    """
    x, f, s = result.x, result.fitted, result.sigma
    hit = result.y > 0 if result.p_det is not None else np.ones(x.size, dtype=bool)
    ax.scatter(x[hit], result.y[hit], s=8, alpha=0.45, color="tab:orange", label="IoU × confidence", rasterized=True)
    if not hit.all():
        ax.scatter(x[~hit], result.y[~hit], s=8, alpha=0.3, color="grey", marker="|", label="missed (y = 0)")
    ax.fill_between(x, f - s, f + s, color="tab:blue", alpha=0.15, label="±σ (per segment)")
    what = "detected scores" if result.p_det is not None else "P-spline"
    ax.plot(x, f, color="navy", linestyle="--", linewidth=1.8, label=f"{what} mean (λ={result.spline.lam:g})")
    if result.p_det is not None:
        ax.plot(x, result.p_det, color="purple", linewidth=1.5, label="p_det(x) (logistic P-spline)")
    if result.interval is not None:
        lo, hi = result.interval.pcd_ci
        level = f"{100 * result.interval.level:g} %"
        ax.axvspan(lo, hi, color="red", alpha=0.1, label=f"PCD {level} CI [{lo:.1f}, {hi:.1f}]")
    for i, cp in enumerate(result.change_points.distances):
        ax.axvline(cp, color="tab:green", linestyle="-.", linewidth=1.2, label="change point" if i == 0 else None)
    ax.axhline(result.y_t, color="sienna", linestyle=":", linewidth=1.2, label=f"y_t = {result.y_t:g}")
    ax.axvline(
        result.pcd, color="red", linestyle=":", linewidth=2.0, label=f"PCD = {result.pcd:.1f} m (p_t = {result.p_t:g})"
    )
    ax.set_xlabel("distance (m)")
    ax.set_ylabel("IoU × confidence")
    ax.set_title(title or f"PCD ({result.method}, {result.model})")
    ax.grid(True, linestyle="--", alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def draw_surface(ax: Axes, result: PCDResult, title: str = "", vmax: float | None = None):
    """Heatmap of PCD over the grid (rows y_t, columns p_t) with each cell's value written in it."""
    grid = result.grid
    im = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto", vmin=0.0, vmax=vmax)
    ax.set_xticks(range(len(result.grid_p_t)), [f"{v:g}" for v in result.grid_p_t], fontsize=7)
    ax.set_yticks(range(len(result.grid_y_t)), [f"{v:g}" for v in result.grid_y_t], fontsize=7)
    ax.set_xlabel("p_t")
    ax.set_ylabel("y_t")
    ax.set_title(title or f"PCD surface, mPCD = {result.mpcd:.1f} m")
    top = vmax if vmax is not None else float(np.max(grid)) or 1.0
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            val = grid[i, j]
            ax.text(
                j, i, f"{val:.0f}", ha="center", va="center", fontsize=6, color="white" if val < 0.6 * top else "black"
            )
    return im


def _save(fig: Figure, path: str | Path, width_px: int | None) -> Path:
    return save_figure(fig, path, 110, width_px)


FIT_MARGINS: Margins = (0.75, 0.15, 0.55, 0.35, 0.3, 0.0)
"""`fits_figure`: tick labels and the y label left, the distance label below, the panel titles above (inches)."""
SURFACE_MARGINS: Margins = (0.65, 0.15, 0.55, 0.35, 0.6, 0.0)
"""`surfaces_figure`: as `FIT_MARGINS`; each panel's colour bar takes its room from the panel."""


def fits_figure(results: Sequence[tuple[str, PCDResult]], path: str | Path, width_px: int | None = None) -> Path:
    """One panel per input (side by side, shared y axis) with `draw_fit`; writes a PNG (``width_px``: drawn for
    the report, `figure_save`)."""
    k = max(1, len(results))
    fig, axes = fixed_grid(k, k, 6.0, 4.0, margins=FIT_MARGINS)  # 6k x 4.5 in, no layout pass
    for ax, (label, res) in zip(axes, results, strict=False):
        draw_fit(ax, res, f"{label} ({res.model}): {len(res.change_points.distances)} change point(s)")
    return _save(fig, path, width_px)


def surfaces_figure(results: Sequence[tuple[str, PCDResult]], path: str | Path, width_px: int | None = None
                    ) -> Path:
    """One PCD-surface heatmap per input, each with its own colour bar (ranges may differ a lot); writes a PNG
    (``width_px``: drawn for the report, `figure_save`)."""
    k = max(1, len(results))
    fig, axes = fixed_grid(k, k, 5.6, 4.0, sharey=False, margins=SURFACE_MARGINS)  # 5.6k x 4.5 in
    for ax, (label, res) in zip(axes, results, strict=False):
        ci = ""
        if res.interval is not None:
            ci = " [{:.1f}, {:.1f}]".format(*res.interval.mpcd_ci)
        im = draw_surface(ax, res, f"{label}: mPCD = {res.mpcd:.1f} m{ci}")
        fig.colorbar(im, ax=ax, label="PCD (m)")
    return _save(fig, path, width_px)
