"""Small multiples for breakdowns by condition, as SVG: recall vs distance, PCD fits, and SG/RH/AC per condition value.

One panel per condition value on shared axes, so conditions compare at a glance; a value whose quantity could
not be computed gets a panel that says so (never an empty axis).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from perception_safety.evaluation.confusion.metrics import ClassMetrics
from perception_safety.evaluation.pcd.compute import PCDResult
from perception_safety.report.confusion_plots import draw_rates, rate_xlim
from perception_safety.report.figure_save import REPORT_WIDTH, columns_for, save_svg
from perception_safety.report.pcd_plots import draw_fit, fit_legend, fit_limits, shared_ylim
from perception_safety.report.svg.axes import Axes, Box, colour, legend_row, limits, panel_grid, suptitle
from perception_safety.report.svg.canvas import Canvas, FigureDataError, text_width


def _grid(n: int, most_cols: int, height: float, left: float = 64, bottom: float = 50, top: float = 58
          ) -> tuple[float, float, list[Box], int]:
    """Panels of one small-multiples figure `REPORT_WIDTH` wide: width, height, boxes and columns."""
    cols = columns_for(n, most_cols)
    panel_w = (REPORT_WIDTH - left - 15 - (cols - 1) * 22) / cols
    w, h, boxes = panel_grid(n, cols, (panel_w, height), (left, 15, top, bottom), (22, bottom + 34))
    return w, h, boxes, cols


def recall_small_multiples(
    per_value: Mapping[str, Sequence[ClassMetrics]], attribute: str, path: str | Path, alpha: float = 0.05
) -> Path:
    """Recall per distance bin (bin centre) per class, one panel per condition value, with interval error bars
    (hollow markers: thin bins); shared axes."""
    level = f"{100 * (1 - alpha):g} %"
    title = f"Recall vs distance by {attribute} (error bars: {level} Clopper-Pearson)"
    w, h, boxes, cols = _grid(len(per_value), 3, 190)
    desc = "; ".join(f"{attribute} = {v}: " + ", ".join(f"recall '{m.label}' {m.recall:.2f} (n = {m.ground_truth})"
                                                        for m in ms if m.bin == "pooled" and m.recall is not None)
                     for v, ms in per_value.items())
    canvas = Canvas(w, h, title, desc, Path(path).stem)
    suptitle(canvas, title)
    xlim = rate_xlim([m for ms in per_value.values() for m in ms], ("recall",))
    for i, (box, (value, metrics)) in enumerate(zip(boxes, per_value.items(), strict=True)):
        ax = Axes(canvas, box, xlim, (-0.02, 1.02))
        n = sum(m.ground_truth for m in metrics if m.bin == "pooled" and m.recall is not None)
        panel = f"{value} (n = {n} objects)"  # the attribute is in the figure's title
        if not draw_rates(ax, metrics, "recall"):
            ax.note("not computed: no ground-truth object of any class")
            canvas.text(box.x + box.w / 2, box.y - 8, panel, 12, weight="600")
            continue
        first = i % cols == 0
        ax.frame(ylabels=first)
        ax.labels("distance (m, bin centre)", "recall" if first else "", panel)
        ax.legend()
    return save_svg(canvas, path)


def pcd_small_multiples(
    per_value: Mapping[str, PCDResult | str], attribute: str, target: str, path: str | Path
) -> Path:
    """PCD fit (samples, spline, band, PCD line) of one target, one panel per value (shared y axis, one legend under
    the title); a string = why not computed."""
    title = f"PCD of '{target}' by {attribute}: IoU × confidence vs distance (m)"
    w, h, boxes, cols = _grid(len(per_value), 3, 230, left=70, top=92)
    desc = "; ".join(f"{attribute} = {v}: " + (f"not computed: {r}" if isinstance(r, str) else
                                               f"PCD {r.pcd:.1f} m, n = {r.x.size}") for v, r in per_value.items())
    canvas = Canvas(w, h, title, desc, Path(path).stem)
    suptitle(canvas, title)
    fits = [r for r in per_value.values() if not isinstance(r, str)]
    legend_row(canvas, fit_legend(fits), 30)
    ylim = shared_ylim(fits)
    for i, (box, (value, res)) in enumerate(zip(boxes, per_value.items(), strict=True)):
        panel = str(value)  # the attribute is in the figure's title
        if isinstance(res, str):
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not computed: {res}")
            canvas.text(box.x + box.w / 2, box.y - 8, panel, 12, weight="600")
            continue
        try:
            ax = Axes(canvas, box, fit_limits(res)[0], ylim)
        except FigureDataError as exc:
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not drawn: {exc}")
            continue
        draw_fit(ax, res, f"{panel}: PCD {res.pcd:.1f} m, n = {res.x.size}", legend=False, ylabels=i % cols == 0)
    return save_svg(canvas, path)


def returns_bars(per_value: Mapping[str, Mapping[str, Mapping[str, float]]], attribute: str, path: str | Path) -> Path:
    """SG, RH, AC per condition value, one panel per scheme (E1, E2; per-frame averages); "n/a" where a value has no
    figure."""
    schemes = [s for s in ("E1", "E2") if any(s in v for v in per_value.values())]
    values = list(per_value)
    below = 40 + 0.5 * max((text_width(str(v), 10) for v in values), default=10)  # x labels at 30 degrees
    n = max(1, len(schemes))
    panel_w = (REPORT_WIDTH - 75 - 15 - (n - 1) * 70) / n
    w, h, boxes = panel_grid(n, 2, (panel_w, 260), (75, 15, 58, below), (70, 0))
    title = f"SG / RH / AC by {attribute}"
    canvas = Canvas(w, h, title, "Bars per value: SG, RH, AC (returns per frame, averaged over frames)",
                    Path(path).stem)
    suptitle(canvas, title)
    if not schemes:
        Axes(canvas, boxes[0], (0, 1), (0, 1)).note("not computed: no scheme computed")
        return save_svg(canvas, path)
    x = np.arange(len(values), dtype=float)
    for box, scheme in zip(boxes, schemes, strict=True):
        table = {k: np.array([per_value[v].get(scheme, {}).get(k, np.nan) for v in values], dtype=float)
                 for k in ("SG", "RH", "AC")}
        try:
            ylim = limits(*table.values(), [0.0], what=f"SG / RH / AC by {attribute}, {scheme}")
        except FigureDataError as exc:
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not drawn: {exc}")
            continue
        ax = Axes(canvas, box, (-0.6, len(values) - 0.4), ylim)
        ax.frame(xticks=x, xtick_text=values, rotate=30)
        for i, (key, ys) in enumerate(table.items()):
            ax.bars(x + (i - 1) * 0.27, ys, 0.27, colour(i), key)
            for xi in x[~np.isfinite(ys)]:
                canvas.text(float(ax.x(xi + (i - 1) * 0.27)), float(ax.y(0.0)) - 4, "n/a", 8)
        ax.hline(0.0, "#1b1f24", 0.8)
        ax.labels("", "value (returns per frame)", f"{scheme}, averaged over frames", ylabel_gap=50)
        ax.legend()
    return save_svg(canvas, path)
