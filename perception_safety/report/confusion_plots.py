"""Heatmaps of distance-binned confusion matrices (seed paper Figs. 6-7): one PNG per bin and a grid.

Colour is the column-normalised ``P(pred | true)`` (eqs. 5, 8); each cell shows the count and the
probability. Rows are predicted labels, columns true labels, ``empty`` last.
Uses matplotlib's object API with the Agg canvas (no pyplot state, no display needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perception_safety.evaluation.confusion.metrics import ClassMetrics
from perception_safety.evaluation.confusion.types import DistanceConfusion, EmptyColumn, Kind, column_normalize
from perception_safety.report.figure_save import REPORT_WIDTH, Margins, fixed_grid, save_figure

_TITLES = {"class": "class-labeled", "prop": "proposition-labeled"}


def draw_matrix(
    ax: Axes,
    cm: np.ndarray,
    labels: tuple[str, ...],
    title: str,
    empty_column: EmptyColumn = "zeros",
    fontsize: float | None = None,
):
    """One heatmap: colour P(pred | true), text ``count`` and ``p`` per cell; returns the image.

    ``fontsize`` of the cell text; default scales with the number of labels (readable up to 8 labels on a
    panel of about 1 inch per label, see `plot_pages`).
    """
    p = column_normalize(cm, empty_column)
    im = ax.imshow(p, cmap="Blues", vmin=0.0, vmax=1.0)
    n = len(labels)
    tick = 9 if n <= 4 else 8
    ax.set_xticks(range(n), labels, fontsize=tick, rotation=30 if n > 3 else 0)
    ax.set_yticks(range(n), labels, fontsize=tick)
    ax.set_xlabel("true", fontsize=9)
    ax.set_ylabel("predicted", fontsize=9)
    ax.set_title(title, fontsize=10)
    small = fontsize or (5 if n > 6 else 7)
    column_n = cm.sum(axis=0)
    for i in range(n):
        for j in range(n):
            color = "white" if p[i, j] > 0.6 else "black"
            rate = f"{p[i, j]:.2f}" if column_n[j] > 0 else "n/a"  # no sample of this true label: undefined
            ax.text(j, i, f"{int(cm[i, j])}\n{rate}", ha="center", va="center", fontsize=small, color=color)
    return im


def bins_with_objects(dc: DistanceConfusion, kind: Kind) -> list[int]:
    """Bins holding at least one ground-truth object (a count in a column other than the trailing empty one)."""
    cms = dc.counts(kind)
    return [k for k in range(dc.n_bins) if int(cms[k][:, :-1].sum()) > 0]


def plot_pages(
    dc: DistanceConfusion,
    kind: Kind,
    out_dir: str | Path,
    per_page: int = 4,
    dpi: int = 100,
    empty_column: EmptyColumn = "zeros",
) -> tuple[list[Path], list[int]]:
    """Readable pages of 2 x 2 large panels: every bin with ground-truth objects, then the pooled matrix.

    Returns the PNG paths ``{kind}_cm_page{i}.png`` and the bins left out because they hold no object
    (their matrices would only count empty frames; the caller names them instead of drawing empty grids).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = bins_with_objects(dc, kind)
    skipped = [k for k in range(dc.n_bins) if k not in drawn]
    panels: list[int | None] = [*drawn, None]
    n = len(dc.labels(kind))
    size = 1.3 + 0.95 * n
    cell_font = 11 if n <= 3 else 10 if n <= 4 else 8
    paths = []
    for page, start in enumerate(range(0, len(panels), per_page)):
        chunk = panels[start : start + per_page]
        cols = min(2, len(chunk))
        rows = math.ceil(len(chunk) / cols)
        fig = Figure(figsize=(cols * size + 1.2, rows * size + 0.4))
        _fixed_margins(fig, rows, cols, n)
        _draw_panels(fig, dc, kind, chunk, rows, cols, empty_column, cell_font, shrink=0.7, bar_right_in=0.95)
        paths.append(_save(fig, out / f"{kind}_cm_page{page + 1}.png", dpi, REPORT_WIDTH))
    return paths, skipped


def _fixed_margins(fig: Figure, rows: int, cols: int, n: int) -> None:
    """Room for the tick labels (rotated past 3 labels), axis labels, titles and the colour bar, in inches: a fixed
    layout costs no layout pass, which costs as much as drawing the page."""
    width, height = fig.get_size_inches()
    left, right, bottom, top, between_cols, between_rows = 0.9, 1.25, 0.75 if n <= 3 else 0.95, 0.35, 0.95, 0.85
    bottom_room = bottom + (rows - 1) * (between_rows + (0.2 if n > 3 else 0.0))
    panel_w = (width - left - right - (cols - 1) * between_cols) / cols
    panel_h = (height - bottom_room - top) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=between_cols / panel_w, hspace=(bottom_room - bottom) / max(rows - 1, 1) / panel_h)


def _draw_panels(
    fig: Figure,
    dc: DistanceConfusion,
    kind: Kind,
    panels: list[int | None],
    rows: int,
    cols: int,
    empty_column: EmptyColumn,
    fontsize: float | None,
    shrink: float,
    bar_right_in: float | None = None,
) -> None:
    """One heatmap per panel (bin index, None = pooled) on a rows x cols grid, unused axes off, one colour bar
    (``bar_right_in``: in its own axes that far from the right edge, for a fixed layout)."""
    axes = fig.subplots(rows, cols, squeeze=False)
    im = None
    for idx, ax in enumerate(axes.flat):
        if idx >= len(panels):
            ax.set_axis_off()
            continue
        k = panels[idx]
        cm = dc.counts(kind, pooled=True) if k is None else dc.counts(kind)[k]
        im = draw_matrix(ax, cm, dc.labels(kind), _bin_title(dc, kind, k), empty_column, fontsize)
    if im is None:
        return
    if bar_right_in is None:
        fig.colorbar(im, ax=axes, label="P(pred | true)", shrink=shrink)
        return
    width = fig.get_size_inches()[0]
    sp = fig.subplotpars
    tall = (sp.top - sp.bottom) * shrink
    cax = fig.add_axes((1 - bar_right_in / width, sp.bottom + (sp.top - sp.bottom - tall) / 2, 0.18 / width, tall))
    fig.colorbar(im, cax=cax, label="P(pred | true)")


def _bin_title(dc: DistanceConfusion, kind: Kind, k: int | None) -> str:
    if k is None:
        lo, hi = dc.bin_edges[0][0], dc.bin_edges[-1][1]
        return f"{_TITLES[kind]}, pooled [{lo:g}, {hi:g}) m"
    lo, hi = dc.bin_edges[k]
    return f"{_TITLES[kind]}, [{lo:g}, {hi:g}) m"


def _save(fig: Figure, path: Path, dpi: int, width_px: int | None = None) -> Path:
    """``width_px``: drawn for the report (`figure_save`); None: the ``confusion`` command's files, at ``dpi``."""
    return save_figure(fig, path, dpi, width_px)


def plot_bin(
    dc: DistanceConfusion,
    kind: Kind,
    k: int | None,
    path: str | Path,
    dpi: int = 100,
    empty_column: EmptyColumn = "zeros",
) -> Path:
    """Heatmap of bin ``k`` (``None`` = pooled) of one matrix type, saved as PNG."""
    n = len(dc.labels(kind))
    size = 2.2 + 0.75 * n
    fig = Figure(figsize=(size + 1.0, size), layout="constrained")
    ax = fig.add_subplot()
    cm = dc.counts(kind, pooled=k is None) if k is None else dc.counts(kind)[k]
    im = draw_matrix(ax, cm, dc.labels(kind), _bin_title(dc, kind, k), empty_column)
    fig.colorbar(im, ax=ax, label="P(pred | true)", shrink=0.8)
    return _save(fig, Path(path), dpi)


def plot_grid(
    dc: DistanceConfusion, kind: Kind, path: str | Path, dpi: int = 90, empty_column: EmptyColumn = "zeros"
) -> Path:
    """All bins of one matrix type, plus the pooled matrix, in one figure."""
    panels: list[int | None] = [*range(dc.n_bins), None]
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    n = len(dc.labels(kind))
    size = 1.6 + 0.6 * n
    fig = Figure(figsize=(cols * size + 1.0, rows * size), layout="constrained")
    _draw_panels(fig, dc, kind, panels, rows, cols, empty_column, None, shrink=0.6)
    fig.suptitle(f"{_TITLES[kind]} confusion matrices by distance (rows predicted, columns true)")
    return _save(fig, Path(path), dpi)


def plot_all(
    dc: DistanceConfusion, out_dir: str | Path, dpi: int = 100, empty_column: EmptyColumn = "zeros"
) -> list[Path]:
    """Per-bin PNGs ``{kind}_cm_bin{k:02d}.png``, ``{kind}_cm_pooled.png`` and ``{kind}_cm_grid.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in ("class", "prop"):
        for k in range(dc.n_bins):
            paths.append(plot_bin(dc, kind, k, out / f"{kind}_cm_bin{k:02d}.png", dpi, empty_column))
        paths.append(plot_bin(dc, kind, None, out / f"{kind}_cm_pooled.png", dpi, empty_column))
        paths.append(plot_grid(dc, kind, out / f"{kind}_cm_grid.png", dpi, empty_column))
    return paths


RATES_MARGINS: Margins = (0.65, 0.15, 0.5, 0.3, 0.2, 0.0)
"""`plot_rates`: tick labels and "rate" on the left, the distance label below, the panel titles above (inches)."""


def plot_rates(metrics: Sequence[ClassMetrics], path: str | Path, alpha: float = 0.05, dpi: int = 100) -> Path:
    """Recall and precision vs distance per class with Clopper-Pearson error bars; hollow markers = thin bins.

    The pooled value of each class is a dotted horizontal line; undefined rates (no samples) are not drawn.
    """
    fig, axes = fixed_grid(2, 2, 5.0, 3.3, margins=RATES_MARGINS)  # 10 x 3.8 in, no layout pass
    labels = list(dict.fromkeys(m.label for m in metrics))
    for ax, rate in zip(axes, ("recall", "precision"), strict=True):
        for i, label in enumerate(labels):
            color = f"C{i}"
            rows = [m for m in metrics if m.label == label and m.bin != "pooled" and getattr(m, rate) is not None]
            x = np.array([(m.lo + m.hi) / 2 for m in rows])
            y = np.array([getattr(m, rate) for m in rows], dtype=float)
            lo = np.array([getattr(m, f"{rate}_lower") for m in rows], dtype=float)
            hi = np.array([getattr(m, f"{rate}_upper") for m in rows], dtype=float)
            thin = np.array([m.thin for m in rows], dtype=bool)
            if len(rows):
                ax.errorbar(x, y, yerr=[y - lo, hi - y], color=color, capsize=3, label=label, fmt="-")
                ax.plot(x[~thin], y[~thin], "o", color=color)
                ax.plot(x[thin], y[thin], "o", mfc="white", color=color)
            pooled = [m for m in metrics if m.label == label and m.bin == "pooled" and getattr(m, rate) is not None]
            for m in pooled:
                ax.axhline(getattr(m, rate), color=color, ls=":", lw=1)
        if not ax.lines and not ax.collections:  # never an empty axis: say why instead
            ax.text(0.5, 0.5, f"not computed:\nno {rate} is defined\n(no samples in any bin)", ha="center",
                    va="center", transform=ax.transAxes, fontsize=9)
        ax.set_xlabel("distance (m, bin centre)")
        ax.set_title(f"{rate} per bin, {100 * (1 - alpha):g} % Clopper-Pearson", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("rate")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8, title="class (hollow: thin bin; dotted: pooled)", title_fontsize=7)
    return _save(fig, Path(path), dpi, REPORT_WIDTH)
