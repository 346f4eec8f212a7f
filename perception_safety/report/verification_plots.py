"""Fig. 8 of the distance-confusion-matrix paper: P(s0 ⊨ φ) vs initial speed, one line per max speed,
one panel per matrix variant (class, class by distance, proposition, proposition by distance), as SVG.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.report.figure_save import REPORT_WIDTH, save_svg
from perception_safety.report.svg.axes import Axes, colour, limits, nice_ticks, panel_grid, suptitle
from perception_safety.report.svg.canvas import Canvas, FigureDataError

TITLES = {
    "class": "(a) class-labeled",
    "class_by_distance": "(b) class-labeled, by distance",
    "prop": "(c) proposition-labeled",
    "prop_by_distance": "(d) proposition-labeled, by distance",
}


def curves(results: Iterable[Mapping[str, Any]], variant: str, true_env: str, spec: str) -> dict[int, list[tuple]]:
    """``{max_speed: [(initial_speed, probability, lower, upper), ...]}`` sorted by initial speed (bounds None
    when not computed)."""
    out: dict[int, list[tuple]] = {}
    for r in results:
        if r["variant"] == variant and r["true_env"] == true_env and r["spec"] == spec:
            out.setdefault(int(r["max_speed"]), []).append(
                (int(r["initial_speed"]), float(r["probability"]), r.get("lower"), r.get("upper")))
    return {v: sorted(pts) for v, pts in sorted(out.items())}


def coinciding(
    results: Iterable[Mapping[str, Any]], variant: str, true_env: str, spec: str, tol: float = 1e-9
) -> list[int]:
    """Max speeds V whose lines lie on top of the line of the largest V (equal within ``tol`` at every shared v0)."""
    data = curves(results, variant, true_env, spec)
    if len(data) < 2:
        return []
    top = max(data)
    ref = {p[0]: p[1] for p in data[top]}
    same = [V for V, pts in data.items() if all(p[0] in ref and abs(p[1] - ref[p[0]]) <= tol for p in pts)]
    return same if len(same) > 1 else []


def speed_label(cell_length_m: float = 1.0, step_s: float | None = None) -> str:
    """The x-axis label: the model's unit (cells per step) with its conversion to metres."""
    if step_s:
        return f"initial speed v0 (cells/step; 1 cell = {cell_length_m:g} m, 1 step = {step_s:g} s)"
    return f"initial speed v0 (cells/step; 1 cell/step = {cell_length_m:g} m per model step)"


def draw_variant(
    ax: Axes,
    data: dict[int, list[tuple]],
    spec: str,
    cell_length_m: float = 1.0,
    step_s: float | None = None,
    ylabels: bool = True,
) -> int:
    """One panel of `curves` ``data``: a line per max speed V with markers, its interval-chain band in the same
    colour; returns the number of lines drawn. With ``step_s`` (seconds per model step) a top axis gives the speed
    in m/s."""
    for i, (V, pts) in enumerate(data.items()):
        if ax.y.log:
            pts = [p for p in pts if p[1] > 0]
        c = colour(i)
        band = [p for p in pts if p[2] is not None and p[3] is not None and (not ax.y.log or p[2] > 0)]
        if band:  # the interval chain's [lower, upper] (Storm IDTMC), same colour, translucent
            ax.band([p[0] for p in band], [p[2] for p in band], [p[3] for p in band], c, 0.15)
        ax.line([p[0] for p in pts], [p[1] for p in pts], c, 1.5, label=f"V={V}", markers=True)
    ax.frame(xticks=nice_ticks(ax.x.lo, ax.x.hi, integer=True), ylabels=ylabels)  # whole cells per step
    if step_s:
        ax.top_axis(cell_length_m / step_s, "initial speed (m/s)")
    ax.labels(speed_label(cell_length_m, step_s), f"P(s0 ⊨ {spec})" if ylabels else "", "", size=10, xlabel_gap=24)
    ax.legend(title="max speed", ncol=2)
    return len(data)


def plot_satisfaction(
    results: Iterable[Mapping[str, Any]], path: str | Path, true_env: str = "ped", spec: str = "phi",
    variants: Iterable[str] = ("class", "class_by_distance", "prop", "prop_by_distance"),
    log_scale: bool = False,
    cell_length_m: float = 1.0,
    step_s: float | None = None,
) -> Path:
    """Write the Fig. 8-style 2×2 figure as SVG, drawn for the report's width (`REPORT_WIDTH`); a variant without
    results gets a panel saying so."""
    results = list(results)
    variants = list(variants)
    cols = 2 if len(variants) > 1 else 1
    banded = any(r.get("lower") is not None for r in results)
    above = 44 if step_s else 0  # the m/s axis on top of each panel
    top = 40 + (18 if banded else 0) + 26 + above
    panel_w = (REPORT_WIDTH - 70 - 15 - (cols - 1) * 40) / cols
    w, h, boxes = panel_grid(len(variants), cols, (panel_w, 280), (70, 15, top, 50), (40, 76 + 26 + above))
    title = f"Satisfaction probability, true environment '{true_env}', spec '{spec}'"
    data = {v: curves(results, v, true_env, spec) for v in variants}
    desc = "; ".join(f"{TITLES.get(v, v)}: " + (", ".join(f"V={V} from {pts[0][1]:.3g} to {pts[-1][1]:.3g}"
                                                          for V, pts in d.items()) or "not computed")
                     for v, d in data.items())
    canvas = Canvas(w, h, title, desc, Path(path).stem)
    suptitle(canvas, title + ("\n(shaded: interval-chain bounds [lower, upper])" if banded else ""))
    everything = [p for d in data.values() for ps in d.values() for p in ps]  # one x and y range: shared axes
    xs = [p[0] for p in everything] or [0]
    xlim = (min(xs) - 0.25, max(xs) + 0.25) if max(xs) > min(xs) else (xs[0] - 1.0, xs[0] + 1.0)
    for i, (box, variant) in enumerate(zip(boxes, variants, strict=True)):
        d = data[variant]
        panel = TITLES.get(variant, variant)
        canvas.text(box.x + box.w / 2, box.y - 8 - above, panel, 12, weight="600")
        pts = [p for ps in d.values() for p in ps]
        if not pts:
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not computed: no result for variant '{variant}', true "
                                                   f"environment '{true_env}', spec '{spec}' (see the warnings)")
            continue
        try:
            ylim = _log_limits(everything) if log_scale else (-0.02, 1.02)
            ax = Axes(canvas, box, xlim, ylim, ylog=log_scale)
        except FigureDataError as exc:
            Axes(canvas, box, (0, 1), (0, 1)).note(f"not drawn: {exc}")
            continue
        draw_variant(ax, d, spec, cell_length_m, step_s, ylabels=i % cols == 0)
    return save_svg(canvas, path)


def _log_limits(pts: list[tuple]) -> tuple[float, float]:
    """A log axis over the positive probabilities and bounds, widened to whole decades."""
    values = [v for p in pts for v in (p[1], p[2], p[3]) if v is not None and v > 0]
    lo, hi = limits(np.log10(values) if values else [], pad=0.0, what="satisfaction (log scale)")
    return 10.0 ** np.floor(lo), 10.0 ** max(np.ceil(hi), np.floor(lo) + 1)
