"""Heatmaps of distance-binned confusion matrices (seed paper Figs. 6-7) and rates vs distance, as SVG.

Colour is the column-normalised ``P(pred | true)`` (eqs. 5, 8); each cell shows the count and the probability
("n/a" and grey where the true label has no sample: the rate is undefined). Rows are predicted labels, columns true
labels, ``empty`` last.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perception_safety.evaluation.confusion.metrics import ClassMetrics
from perception_safety.evaluation.confusion.types import DistanceConfusion, EmptyColumn, Kind, column_normalize
from perception_safety.report.figure_save import REPORT_WIDTH, save_svg
from perception_safety.report.svg.axes import Axes, Box, colour, limits, panel_grid, suptitle
from perception_safety.report.svg.canvas import Canvas, text_width
from perception_safety.report.svg.heatmap import BLUES, cell_labels, cells, colour_bar

_TITLES = {"class": "class-labeled", "prop": "proposition-labeled"}


def matrix_texts(cm: np.ndarray, empty_column: EmptyColumn = "zeros") -> tuple[np.ndarray, list[list[str]]]:
    """Colour values (P(pred | true); NaN where the column has no sample) and ``count\\nrate`` texts of a matrix."""
    p = column_normalize(cm, empty_column)
    column_n = cm.sum(axis=0)
    shown = np.where(column_n[None, :] > 0, p, np.nan)
    texts = [[f"{int(cm[i, j])}\n{p[i, j]:.2f}" if column_n[j] > 0 else f"{int(cm[i, j])}\nn/a"
              for j in range(cm.shape[1])] for i in range(cm.shape[0])]
    return shown, texts


def draw_matrix(canvas: Canvas, box: Box, cm: np.ndarray, labels: tuple[str, ...], title: str,
                empty_column: EmptyColumn = "zeros", size: float | None = None) -> None:
    """One heatmap in ``box``: colour P(pred | true), text ``count`` and ``p`` per cell, labels, title."""
    n = len(labels)
    shown, texts = matrix_texts(np.asarray(cm), empty_column)
    cells(canvas, box, shown, texts, BLUES, 0.0, 1.0, size or (12 if n <= 3 else 11 if n <= 4 else 9))
    rotate = 30.0 if n > 3 else 0.0
    cell_labels(canvas, box, labels, labels, 10.0, rotate)
    below = 22 + (0.5 * max(text_width(t, 10) for t in labels) if rotate else 0)
    canvas.text(box.x + box.w / 2, box.bottom + below, "true", 11, valign="top")
    canvas.text(box.x - 12 - max(text_width(t, 10) for t in labels), box.y + box.h / 2, "predicted", 11, rotate=-90)
    canvas.text(box.x + box.w / 2, box.y - 8, title, 12, weight="600")


def bins_with_objects(dc: DistanceConfusion, kind: Kind) -> list[int]:
    """Bins holding at least one ground-truth object (a count in a column other than the trailing empty one)."""
    cms = dc.counts(kind)
    return [k for k in range(dc.n_bins) if int(cms[k][:, :-1].sum()) > 0]


def _matrices_figure(dc: DistanceConfusion, kind: Kind, panels: Sequence[int | None], cols: int, path: Path,
                     title: str, empty_column: EmptyColumn, side: float | None = None) -> Path:
    """Heatmaps of ``panels`` (bin index, None = pooled) on ``cols`` columns with one colour bar on the right."""
    labels = dc.labels(kind)
    n = len(labels)
    side = side or min(340.0, max(220.0, 80.0 * n))
    label_w = max(text_width(t, 10) for t in labels)
    below = 50 + (0.5 * label_w if n > 3 else 0)
    top = 34 + (28 if title else 0)
    w, h, boxes = panel_grid(len(panels), cols, (side, side), (label_w + 40, 110, top, below),
                             (label_w + 60, below + 34))
    desc = (f"{_TITLES[kind]} confusion matrices, rows predicted, columns true; each cell: count and P(pred | true) "
            "(colour); grey 'n/a': no sample of that true label")
    canvas = Canvas(w, h, title or f"{_TITLES[kind]} confusion matrices", desc, path.stem)
    if title:
        suptitle(canvas, title)
    for box, k in zip(boxes, panels, strict=True):
        cm = dc.counts(kind, pooled=True) if k is None else dc.counts(kind)[k]
        draw_matrix(canvas, box, cm, labels, _bin_title(dc, kind, k), empty_column)
    bar_h = min(h - top - below, 2 * side)
    colour_bar(canvas, Box(w - 80, top + (h - top - below - bar_h) / 2, 16, bar_h), BLUES, 0.0, 1.0,
               "P(pred | true)")
    return save_svg(canvas, path)


def plot_pages(
    dc: DistanceConfusion,
    kind: Kind,
    out_dir: str | Path,
    per_page: int = 4,
    empty_column: EmptyColumn = "zeros",
) -> tuple[list[Path], list[int]]:
    """Readable pages of 2 x 2 large panels: every bin with ground-truth objects, then the pooled matrix.

    Returns the SVG paths ``{kind}_cm_page{i}.svg`` and the bins left out because they hold no object
    (their matrices would only count empty frames; the caller names them instead of drawing empty grids).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = bins_with_objects(dc, kind)
    skipped = [k for k in range(dc.n_bins) if k not in drawn]
    panels: list[int | None] = [*drawn, None]
    paths = []
    for page, start in enumerate(range(0, len(panels), per_page)):
        chunk = panels[start : start + per_page]
        paths.append(_matrices_figure(dc, kind, chunk, min(2, len(chunk)), out / f"{kind}_cm_page{page + 1}.svg", "",
                                      empty_column))
    return paths, skipped


def _bin_title(dc: DistanceConfusion, kind: Kind, k: int | None) -> str:
    if k is None:
        lo, hi = dc.bin_edges[0][0], dc.bin_edges[-1][1]
        return f"{_TITLES[kind]}, pooled [{lo:g}, {hi:g}) m"
    lo, hi = dc.bin_edges[k]
    return f"{_TITLES[kind]}, [{lo:g}, {hi:g}) m"


def plot_bin(dc: DistanceConfusion, kind: Kind, k: int | None, path: str | Path,
             empty_column: EmptyColumn = "zeros") -> Path:
    """Heatmap of bin ``k`` (``None`` = pooled) of one matrix type, saved as SVG."""
    return _matrices_figure(dc, kind, [k], 1, Path(path), "", empty_column)


def plot_grid(dc: DistanceConfusion, kind: Kind, path: str | Path, empty_column: EmptyColumn = "zeros") -> Path:
    """All bins of one matrix type, plus the pooled matrix, in one figure."""
    panels: list[int | None] = [*range(dc.n_bins), None]
    title = f"{_TITLES[kind]} confusion matrices by distance (rows predicted, columns true)"
    return _matrices_figure(dc, kind, panels, min(4, len(panels)), Path(path), title, empty_column,
                            min(300.0, max(200.0, 60.0 * len(dc.labels(kind)))))


def plot_all(dc: DistanceConfusion, out_dir: str | Path, empty_column: EmptyColumn = "zeros") -> list[Path]:
    """Per-bin SVGs ``{kind}_cm_bin{k:02d}.svg``, ``{kind}_cm_pooled.svg`` and ``{kind}_cm_grid.svg``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in ("class", "prop"):
        for k in range(dc.n_bins):
            paths.append(plot_bin(dc, kind, k, out / f"{kind}_cm_bin{k:02d}.svg", empty_column))
        paths.append(plot_bin(dc, kind, None, out / f"{kind}_cm_pooled.svg", empty_column))
        paths.append(plot_grid(dc, kind, out / f"{kind}_cm_grid.svg", empty_column))
    return paths


def draw_rates(ax: Axes, metrics: Sequence[ClassMetrics], rate: str, pooled: bool = False) -> bool:
    """``rate`` (recall or precision) per distance bin (bin centre) per class with its interval as error bars,
    hollow markers on thin bins; ``pooled``: each class's pooled value as a dotted line. False: nothing defined."""
    drawn = False
    for i, label in enumerate(dict.fromkeys(m.label for m in metrics if m.bin != "pooled")):
        c = colour(i)
        rows = [m for m in metrics if m.label == label and m.bin != "pooled" and getattr(m, rate) is not None]
        if rows:
            x = np.array([(m.lo + m.hi) / 2 for m in rows])
            y = np.array([getattr(m, rate) for m in rows], dtype=float)
            lo = np.array([_or(getattr(m, f"{rate}_lower"), v) for m, v in zip(rows, y, strict=True)])
            hi = np.array([_or(getattr(m, f"{rate}_upper"), v) for m, v in zip(rows, y, strict=True)])
            thin = np.array([m.thin for m in rows], dtype=bool)
            ax.errorbars(x, lo, hi, c)
            ax.line(x, y, c, 1.6, label=label)
            ax.scatter(x[~thin], y[~thin], c, 3.5)
            ax.scatter(x[thin], y[thin], c, 3.5, hollow=True)
            drawn = True
        for m in metrics:
            if pooled and m.label == label and m.bin == "pooled" and getattr(m, rate) is not None:
                ax.hline(getattr(m, rate), c, 1.2, "2 3")
    return drawn


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def rate_xlim(metrics: Sequence[ClassMetrics], rates: Sequence[str] = ("recall", "precision")) -> tuple[float, float]:
    """Distance range of the centres of the bins where one of ``rates`` is defined (axes shared by several panels);
    (0, 1) when none is."""
    centres = [(m.lo + m.hi) / 2 for m in metrics
               if m.bin != "pooled" and any(getattr(m, r) is not None for r in rates)]
    return limits(centres, what="rates vs distance") if centres else (0.0, 1.0)


def plot_rates(metrics: Sequence[ClassMetrics], path: str | Path, alpha: float = 0.05) -> Path:
    """Recall and precision vs distance per class with Clopper-Pearson error bars; hollow markers = thin bins.

    The pooled value of each class is a dotted horizontal line; undefined rates (no samples) are not drawn.
    """
    w, h, boxes = panel_grid(2, 2, ((REPORT_WIDTH - 70 - 15 - 24) / 2, 330), (70, 15, 30, 50), (24, 0))
    level = f"{100 * (1 - alpha):g} %"
    canvas = Canvas(w, h, f"Recall and precision vs distance per class ({level} Clopper-Pearson error bars)",
                    "Hollow markers: thin bins; dotted lines: pooled value of each class", Path(path).stem)
    xlim = rate_xlim(metrics)
    for i, (box, rate) in enumerate(zip(boxes, ("recall", "precision"), strict=True)):
        ax = Axes(canvas, box, xlim, (-0.02, 1.02))
        if not draw_rates(ax, metrics, rate, pooled=True):
            ax.note(f"not computed: no {rate} is defined (no samples in any bin)")
            continue
        ax.frame(ylabels=i == 0)
        ax.labels("distance (m, bin centre)", "rate" if i == 0 else "", f"{rate} per bin, {level} Clopper-Pearson")
        if i == 0:
            ax.legend(title="class (hollow: thin bin; dotted: pooled)")
    return save_svg(canvas, path)

