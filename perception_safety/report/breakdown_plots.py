"""Small multiples for breakdowns by condition: recall vs distance, PCD fits, and SG/RH/AC per condition value.

One panel per condition value on shared axes, so conditions compare at a glance; a value whose quantity could
not be computed gets a panel that says so (never an empty axis). Matplotlib object API, Agg canvas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from perception_safety.evaluation.confusion.metrics import ClassMetrics
from perception_safety.evaluation.pcd.compute import PCDResult
from perception_safety.report.figure_save import Margins, fixed_grid, save_figure
from perception_safety.report.pcd_plots import draw_fit

RECALL_MARGINS: Margins = (0.6, 0.15, 0.5, 0.55, 0.45, 0.75)
PCD_MARGINS: Margins = (0.75, 0.15, 0.55, 0.55, 0.6, 0.8)


def _not_computed(ax, title: str, why: str) -> None:
    ax.set_title(title, fontsize=9)
    # hide this panel's ticks only (set_yticks([]) would empty the axis the other panels share)
    ax.tick_params(left=False, labelleft=False, bottom=False, labelbottom=False)
    ax.text(0.5, 0.5, f"not computed:\n{why}", ha="center", va="center", fontsize=8, wrap=True, transform=ax.transAxes)


def _save(fig: Figure, path: str | Path, dpi: int = 90) -> Path:
    return save_figure(fig, path, dpi)  # drawn for the report: these figures exist for it


def recall_small_multiples(
    per_value: Mapping[str, Sequence[ClassMetrics]], attribute: str, path: str | Path, alpha: float = 0.05
) -> Path:
    """Recall per distance bin (bin centre) per class, one panel per condition value, with interval error bars."""
    fig, axes = fixed_grid(len(per_value), 4, 3.3, 2.6, margins=RECALL_MARGINS)
    for ax, (value, metrics) in zip(axes, per_value.items(), strict=False):
        labels = list(dict.fromkeys(m.label for m in metrics if m.bin != "pooled"))
        drawn = False
        for i, label in enumerate(labels):
            rows = [m for m in metrics if m.label == label and m.bin != "pooled" and m.recall is not None]
            if not rows:
                continue
            x = np.array([(m.lo + m.hi) / 2 for m in rows])
            y = np.array([m.recall for m in rows], dtype=float)
            lo = np.array([m.recall_lower if m.recall_lower is not None else m.recall for m in rows], dtype=float)
            hi = np.array([m.recall_upper if m.recall_upper is not None else m.recall for m in rows], dtype=float)
            ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="-o", ms=3, capsize=2, color=f"C{i}", label=label)
            drawn = True
        if not drawn:
            _not_computed(ax, f"{attribute} = {value}", "no ground-truth object\nof any class")
            continue
        ax.set_title(f"{attribute} = {value}", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("distance (m, bin centre)", fontsize=8)
        ax.set_ylabel("recall", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    level = f"{100 * (1 - alpha):g} %"
    fig.suptitle(f"Recall vs distance by {attribute} (error bars: {level} Clopper-Pearson)", fontsize=10, y=0.995,
                 va="top")
    return _save(fig, path)


def pcd_small_multiples(
    per_value: Mapping[str, PCDResult | str], attribute: str, target: str, path: str | Path
) -> Path:
    """PCD fit (samples, spline, band, PCD line) of one target, one panel per value; a string = why not computed."""
    fig, axes = fixed_grid(len(per_value), 3, 4.2, 3.2, margins=PCD_MARGINS)
    for ax, (value, res) in zip(axes, per_value.items(), strict=False):
        title = f"{attribute} = {value}"
        if isinstance(res, str):
            _not_computed(ax, title, res)
            continue
        draw_fit(ax, res, f"{title}: PCD {res.pcd:.1f} m, n = {res.x.size}")
        ax.title.set_fontsize(9)
        leg = ax.get_legend()
        if leg is not None:
            leg.remove()
    fig.suptitle(f"PCD of '{target}' by {attribute}: IoU × confidence vs distance (m), red line = PCD", fontsize=10,
                 y=0.995, va="top")
    return _save(fig, path)


def returns_bars(per_value: Mapping[str, Mapping[str, Mapping[str, float]]], attribute: str, path: str | Path) -> Path:
    """SG, RH, AC per condition value, one panel per scheme (E1, E2; per-frame averages)."""
    schemes = [s for s in ("E1", "E2") if any(s in v for v in per_value.values())]
    longest = max((len(str(v)) for v in per_value), default=1)  # x labels at 30 degrees: room for the longest
    margins = (0.75, 0.15, 0.25 + 0.5 * longest * 8 * 0.6 / 72, 0.65, 0.8, 0.0)
    fig, axes = fixed_grid(max(1, len(schemes)), 2, max(4.0, 0.9 * len(per_value) + 1.5), 3.4, sharey=False,
                           margins=margins)
    values = list(per_value)
    x = np.arange(len(values))
    for ax, scheme in zip(axes, schemes, strict=False):
        for i, key in enumerate(("SG", "RH", "AC")):
            ys = [per_value[v].get(scheme, {}).get(key, np.nan) for v in values]
            ax.bar(x + (i - 1) * 0.27, ys, width=0.27, label=key, color=f"C{i}")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, values, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{scheme}, averaged over frames", fontsize=9)
        ax.set_ylabel("value (returns per frame)", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    if not schemes:
        _not_computed(axes[0], attribute, "no scheme computed")
    fig.suptitle(f"SG / RH / AC by {attribute}", fontsize=10)
    return _save(fig, path)
