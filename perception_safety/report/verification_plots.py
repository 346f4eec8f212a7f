"""Fig. 8 of the distance-confusion-matrix paper: P(s0 ⊨ φ) vs initial speed, one line per max speed,
one panel per matrix variant (class, class by distance, proposition, proposition by distance).

Uses matplotlib's object API with the Agg canvas (no pyplot state, no display needed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from perception_safety.report.figure_save import save_figure

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
    results: Iterable[Mapping[str, Any]],
    variant: str,
    true_env: str,
    spec: str,
    log_scale: bool = False,
    cell_length_m: float = 1.0,
    step_s: float | None = None,
) -> int:
    """One panel; returns the number of lines drawn. ``log_scale`` drops zero probabilities (not drawable).

    With ``step_s`` (seconds per model step) a top axis gives the speed in m/s. A panel without results says
    "not computed" instead of drawing empty axes.
    """
    data = curves(results, variant, true_env, spec)
    if not data:
        ax.set_axis_off()
        ax.set_title(TITLES.get(variant, variant), fontsize=10)
        ax.text(0.5, 0.5, f"not computed:\nno result for variant '{variant}',\ntrue environment '{true_env}', "
                f"spec '{spec}'\n(see the warnings)", ha="center", va="center", fontsize=9, transform=ax.transAxes)
        return 0
    for V, pts in data.items():
        if log_scale:
            pts = [p for p in pts if p[1] > 0]
        (line,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, linewidth=1.2,
                          label=f"V={V}")
        band = [p for p in pts if p[2] is not None and p[3] is not None and (not log_scale or p[2] > 0)]
        if band:  # the interval chain's [lower, upper] (Storm IDTMC), same colour, translucent
            ax.fill_between([p[0] for p in band], [p[2] for p in band], [p[3] for p in band],
                            color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_title(TITLES.get(variant, variant), fontsize=10)
    ax.set_xlabel(speed_label(cell_length_m, step_s), fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # the model's speeds are whole cells per step
    if step_s:
        factor = cell_length_m / step_s
        top = ax.secondary_xaxis("top", functions=(lambda v: v * factor, lambda ms: ms / factor))
        top.set_xlabel("initial speed (m/s)", fontsize=8)
    ax.set_ylabel(f"P(s0 ⊨ {spec})")
    if log_scale:
        ax.set_yscale("log")
    else:
        ax.set_ylim(-0.02, 1.02)
    ax.grid(True, linestyle="--", alpha=0.3)
    if data:
        ax.legend(fontsize=7, title="max speed", title_fontsize=7, ncol=2)
    return len(data)


def _fixed_margins(fig: Figure, rows: int, cols: int, title_lines: int, top_axis: bool) -> None:
    """Room in inches for the suptitle, the panel titles, the m/s axis on top (with a step time), tick labels and
    axis labels: a fixed layout costs no layout pass (as much as drawing the figure)."""
    width, height = fig.get_size_inches()
    above = 0.45 if top_axis else 0.0
    left, right, bottom, between_cols = 0.75, 0.2, 0.55, 0.75
    top = 0.15 + 0.22 * title_lines + 0.3 + above
    between_rows = 0.55 + 0.3 + above
    panel_w = (width - left - right - (cols - 1) * between_cols) / cols
    panel_h = (height - bottom - top - (rows - 1) * between_rows) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=between_cols / panel_w, hspace=between_rows / panel_h)


def plot_satisfaction(
    results: Iterable[Mapping[str, Any]], path: str | Path, true_env: str = "ped", spec: str = "phi",
    variants: Iterable[str] = ("class", "class_by_distance", "prop", "prop_by_distance"),
    log_scale: bool = False,
    cell_length_m: float = 1.0,
    step_s: float | None = None,
    width_px: int | None = None,
) -> Path:
    """Write the Fig. 8-style 2×2 figure (PNG or any matplotlib format by suffix; ``width_px``: a PNG drawn for
    the report, `figure_save`)."""
    results = list(results)
    variants = list(variants)
    cols = 2 if len(variants) > 1 else 1
    rows = (len(variants) + cols - 1) // cols
    banded = any(r.get("lower") is not None for r in results)
    fig = Figure(figsize=(5.2 * cols, 4.0 * rows))
    _fixed_margins(fig, rows, cols, 2 if banded else 1, bool(step_s))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, variant in zip(axes, variants, strict=False):
        draw_variant(ax, results, variant, true_env, spec, log_scale, cell_length_m, step_s)
    for ax in axes[len(variants):]:
        ax.set_visible(False)
    fig.suptitle(f"Satisfaction probability, true environment '{true_env}', spec '{spec}'"
                 + ("\n(shaded: interval-chain bounds [lower, upper])" if banded else ""))
    return save_figure(fig, path, 120, width_px)
