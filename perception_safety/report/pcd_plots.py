"""PCD figures as SVG: samples with spline, ±sigma band, change points and PCD (paper Fig. 3–5); PCD surface (Fig. 6).

Several inputs are drawn side by side in one figure so conditions (clear vs rain) or detectors compare directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perception_safety.evaluation.pcd.compute import PCDResult
from perception_safety.report.figure_save import REPORT_WIDTH, save_svg
from perception_safety.report.svg.axes import Axes, Box, LegendEntry, limits, panel_grid, union
from perception_safety.report.svg.canvas import Canvas, FigureDataError
from perception_safety.report.svg.heatmap import VIRIDIS, cell_labels, cells, colour_bar

SAMPLE, MISSED, BAND, MEAN = "#e69f00", "#6e7781", "#0072b2", "#1f3b73"
P_DET, CHANGE, Y_T, PCD_LINE = "#7b3294", "#009e73", "#8c510a", "#d55e00"
"""Colours of the fit's parts: orange samples, blue band and mean, purple p_det, green change points, vermillion
PCD (blue/orange/vermillion/green stay apart with every common colour-vision deficiency; lines also differ in dash)."""


def fit_limits(result: PCDResult) -> tuple[tuple[float, float], tuple[float, float]]:
    """The x (distance) and y ranges `draw_fit` needs: samples, band, p_det, PCD, change points, its interval."""
    ci = list(result.interval.pcd_ci) if result.interval is not None else []
    xlim = limits(result.x, [result.pcd], list(result.change_points.distances), ci, what="PCD fit (distance)")
    curves = [result.y, result.fitted - result.sigma, result.fitted + result.sigma, [result.y_t]]
    if result.p_det is not None:
        curves.append(result.p_det)
    return xlim, limits(*curves, what="PCD fit (IoU × confidence)")


def shared_ylim(results: Sequence[PCDResult]) -> tuple[float, float]:
    """The y range of several fit panels sharing their axis (the drawable ones; (0, 1) when none is)."""
    ranges = []
    for r in results:
        try:
            ranges.append(fit_limits(r)[1])
        except FigureDataError:
            continue  # its panel says why
    return union(ranges) if ranges else (0.0, 1.0)


def fit_legend(results: Sequence[PCDResult]) -> list[LegendEntry]:
    """One legend for several `draw_fit` panels: the parts any of them draws, without per-panel values."""
    if not results:
        return []
    first = results[0]
    entries = [LegendEntry("IoU × confidence", SAMPLE, "marker", opacity=0.6)]
    if any(r.p_det is not None and bool((r.y == 0).any()) for r in results):
        entries.append(LegendEntry("missed (y = 0)", MISSED, "bar"))
    entries += [LegendEntry("±σ (per segment)", BAND, "patch", opacity=0.18),
                LegendEntry("score model mean", MEAN, "line", "6 3", width=2.0)]
    if any(r.p_det is not None for r in results):
        entries.append(LegendEntry("p_det(x)", P_DET, "line", width=1.6))
    if any(r.interval is not None for r in results):
        entries.append(LegendEntry("PCD interval", PCD_LINE, "patch", opacity=0.1))
    if any(r.change_points.distances for r in results):
        entries.append(LegendEntry("change point", CHANGE, "line", "8 3 2 3", width=1.4))
    entries += [LegendEntry(f"y_t = {first.y_t:g}", Y_T, "line", "2 2", width=1.3),
                LegendEntry(f"PCD (p_t = {first.p_t:g})", PCD_LINE, "line", "3 2", width=2.2)]
    return entries


def draw_fit(ax: Axes, result: PCDResult, title: str = "", legend: bool = True, ylabels: bool = True) -> None:
    """Samples of y vs distance, P-spline mean, ±sigma band, change points and the PCD at (y_t, p_t).

    Hurdle model: zeros drawn apart (ticks at y = 0), the mean/band are the detected scores' and ``p_det(x)`` is
    drawn too; with a bootstrap interval the PCD's interval is shaded.
    """
    order = np.argsort(result.x, kind="stable")
    x, y, f, s = result.x[order], result.y[order], result.fitted[order], result.sigma[order]
    if result.interval is not None:
        lo, hi = result.interval.pcd_ci
        level = f"{100 * result.interval.level:g} %"
        ax.vspan(lo, hi, PCD_LINE, 0.1, f"PCD {level} CI [{lo:.1f}, {hi:.1f}]")
    ax.band(x, f - s, f + s, BAND, 0.18, "±σ (per segment)")
    hit = y > 0 if result.p_det is not None else np.ones(x.size, dtype=bool)
    ax.scatter(x[hit], y[hit], SAMPLE, 2.5, 0.6, label="IoU × confidence")
    if not hit.all():
        ax.scatter(x[~hit], y[~hit], MISSED, 3.0, 0.5, "bar", label="missed (y = 0)")
    what = "detected scores" if result.p_det is not None else "P-spline"
    ax.line(x, f, MEAN, 2.0, "6 3", f"{what} mean (λ={result.spline.lam:g})")
    if result.p_det is not None:
        ax.line(x, result.p_det[order], P_DET, 1.6, label="p_det(x) (logistic P-spline)")
    for cp in result.change_points.distances:
        ax.vline(cp, CHANGE, 1.4, "8 3 2 3", "change point")
    ax.hline(result.y_t, Y_T, 1.3, "2 2", f"y_t = {result.y_t:g}")
    ax.vline(result.pcd, PCD_LINE, 2.2, "3 2", f"PCD = {result.pcd:.1f} m (p_t = {result.p_t:g})")
    ax.frame(ylabels=ylabels)
    ax.labels("distance (m)", "IoU × confidence" if ylabels else "", title or f"PCD ({result.method}, {result.model})")
    if legend:
        ax.legend()


def fits_figure(results: Sequence[tuple[str, PCDResult]], path: str | Path) -> Path:
    """One panel per input (side by side, shared y axis) with `draw_fit`; writes an SVG drawn for the
    report's width (`REPORT_WIDTH`), or 480 px per panel if wider."""
    k = max(1, len(results))
    width = max(REPORT_WIDTH, 480 * k)
    panel_w = (width - 70 - 15 - (k - 1) * 20) / k
    w, h, boxes = panel_grid(k, k, (panel_w, 400), (70, 15, 34, 50), (20, 0))
    desc = "; ".join(f"{label}: PCD {r.pcd:.1f} m, {r.x.size} samples" for label, r in results)
    canvas = Canvas(w, h, "PCD fit: IoU × confidence vs distance per input", desc, Path(path).stem)
    if not results:
        Axes(canvas, boxes[0], (0, 1), (0, 1)).note("not computed: no PCD result to draw")
        return save_svg(canvas, path)
    ylim = shared_ylim([r for _, r in results])
    for i, (box, (label, res)) in enumerate(zip(boxes, results, strict=False)):
        title = f"{label} ({res.model}): {len(res.change_points.distances)} change point(s)"
        try:
            ax = Axes(canvas, box, fit_limits(res)[0], ylim)
        except FigureDataError as exc:
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not drawn: {exc}")
            continue
        draw_fit(ax, res, title, ylabels=i == 0)
    return save_svg(canvas, path)


def draw_surface(canvas: Canvas, box: Box, result: PCDResult, title: str = "", vmax: float | None = None) -> None:
    """Heatmap of PCD over the grid (rows y_t, largest on top; columns p_t), each cell's value written in it, and
    its colour bar right of ``box``."""
    grid = np.asarray(result.grid, dtype=float)
    finite = grid[np.isfinite(grid)]
    top = vmax if vmax is not None else (float(finite.max()) if finite.size else 0.0) or 1.0
    shown = grid[::-1]
    texts = [[f"{v:.0f}" if np.isfinite(v) else "n/a" for v in row] for row in shown.tolist()]
    cells(canvas, box, shown, texts, VIRIDIS, 0.0, top, 9.0)
    cell_labels(canvas, box, [f"{v:g}" for v in result.grid_p_t], [f"{v:g}" for v in result.grid_y_t][::-1], 9.0)
    canvas.text(box.x + box.w / 2, box.bottom + 32, "p_t", 11, valign="top")
    canvas.text(box.x - 36, box.y + box.h / 2, "y_t", 11, rotate=-90)
    canvas.text(box.x + box.w / 2, box.y - 8, title or f"PCD surface, mPCD = {result.mpcd:.1f} m", 12, weight="600")
    colour_bar(canvas, Box(box.right + 12, box.y, 14, box.h), VIRIDIS, 0.0, top, "PCD (m)")


def surfaces_figure(results: Sequence[tuple[str, PCDResult]], path: str | Path) -> Path:
    """One PCD-surface heatmap per input, each with its own colour bar (ranges may differ a lot); writes an SVG."""
    k = max(1, len(results))
    width = max(REPORT_WIDTH, 460 * k)
    panel_w = min((width - 60 - 90 - (k - 1) * 150) / k, 560)
    w, h, boxes = panel_grid(k, k, (panel_w, 380), (60, 90, 34, 56), (150, 0))
    canvas = Canvas(w, h, "PCD surface over (y_t, p_t) per input",
                    "; ".join(f"{label}: mPCD {r.mpcd:.1f} m" for label, r in results), Path(path).stem)
    if not results:
        Axes(canvas, boxes[0], (0, 1), (0, 1)).note("not computed: no PCD result to draw")
    for box, (label, res) in zip(boxes, results, strict=False):
        ci = "" if res.interval is None else " [{:.1f}, {:.1f}]".format(*res.interval.mpcd_ci)
        draw_surface(canvas, box, res, f"{label}: mPCD = {res.mpcd:.1f} m{ci}")
    return save_svg(canvas, path)
