"""Matrices as coloured cells with their values written in, and the colour bar that reads the colours back.

Colour maps interpolate published anchor colours linearly (ColorBrewer Blues, viridis: both ordered in lightness,
readable with colour-vision deficiencies); the text in a cell is white on dark cells, black on light ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.report.svg.axes import INK, Box, nice_ticks, tick_labels
from perception_safety.report.svg.canvas import Canvas

MISSING = "#e6e6e6"
"""Fill of a cell without a finite value."""


@dataclass(frozen=True)
class ColourMap:
    """Evenly spaced ``anchors`` (hex) over [0, 1], interpolated linearly in RGB."""

    name: str
    anchors: tuple[str, ...]

    def rgb(self, t: Sequence[float] | np.ndarray) -> np.ndarray:
        """RGB (0-255, float) of the fractions ``t`` (clipped to [0, 1]; NaN gives NaN)."""
        table = np.array([[int(a[i : i + 2], 16) for i in (1, 3, 5)] for a in self.anchors], dtype=float)
        pos = np.linspace(0.0, 1.0, len(self.anchors))
        tt = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
        return np.stack([np.interp(tt, pos, table[:, k]) for k in range(3)], axis=-1) + np.where(
            np.isnan(tt), np.nan, 0.0)[..., None]

    def hex(self, t: Sequence[float] | np.ndarray) -> list[str]:
        """``#rrggbb`` of each fraction (NaN: `MISSING`)."""
        out = []
        for r, g, b in self.rgb(np.ravel(t)).tolist():
            out.append(MISSING if np.isnan(r) else f"#{round(r):02x}{round(g):02x}{round(b):02x}")
        return out


BLUES = ColourMap("Blues", ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c",
                            "#08306b"))
VIRIDIS = ColourMap("viridis", ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
                                "#6ece58", "#b5de2b", "#fde725"))


def ink_on(fill: str) -> str:
    """White text on a dark fill, dark text on a light one (relative luminance, sRGB weights)."""
    if not fill.startswith("#") or len(fill) != 7:
        return INK
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "#fff" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45 else INK


def cells(canvas: Canvas, box: Box, values: np.ndarray, texts: Sequence[Sequence[str]], cmap: ColourMap,
          vmin: float, vmax: float, size: float = 11.0) -> list[list[str]]:
    """``values[i, j]`` as the cell in row ``i`` (from the top) and column ``j`` of ``box``, coloured by ``cmap`` over
    [vmin, vmax], with ``texts[i][j]`` centred in it; returns the fills."""
    rows, cols = values.shape
    cw, ch = box.w / cols, box.h / rows
    span = vmax - vmin if vmax > vmin else 1.0
    fills = np.array(cmap.hex((values - vmin) / span)).reshape(rows, cols)
    for i in range(rows):
        for j in range(cols):
            fill = str(fills[i, j])
            canvas.rect(box.x + j * cw, box.y + i * ch, cw, ch, fill)
            if texts[i][j]:
                canvas.text(box.x + (j + 0.5) * cw, box.y + (i + 0.5) * ch, texts[i][j], size, valign="middle",
                            fill=ink_on(fill))
    canvas.rect(box.x, box.y, box.w, box.h, "none", INK, 1.0)
    return fills.tolist()


def cell_labels(canvas: Canvas, box: Box, columns: Sequence[str], rows: Sequence[str], size: float = 10.0,
                rotate: float = 0.0) -> None:
    """Column names under the matrix (turned by ``rotate`` degrees) and row names left of it."""
    cw, ch = box.w / max(len(columns), 1), box.h / max(len(rows), 1)
    for j, name in enumerate(columns):
        x = box.x + (j + 0.5) * cw
        if rotate:
            canvas.text(x + 3, box.bottom + 8, name, size, "end", "top", rotate=-rotate)
        else:
            canvas.text(x, box.bottom + 6, name, size, valign="top")
    for i, name in enumerate(rows):
        canvas.text(box.x - 6, box.y + (i + 0.5) * ch, name, size, "end", "middle")


def colour_bar(canvas: Canvas, box: Box, cmap: ColourMap, vmin: float, vmax: float, label: str,
               size: float = 10.0) -> None:
    """A vertical bar of ``cmap`` over [vmin, vmax] (bottom to top) with nice ticks right of it and ``label``."""
    canvas.rect(box.x, box.y, box.w, box.h, canvas.gradient(cmap.anchors), INK, 0.8)
    span = vmax - vmin if vmax > vmin else 1.0
    ticks = nice_ticks(vmin, vmin + span)
    for v, t in zip(ticks.tolist(), tick_labels(ticks), strict=True):
        y = box.bottom - (v - vmin) / span * box.h
        canvas.line(box.right, y, box.right + 4, y, INK, 1.0)
        canvas.text(box.right + 6, y, t, size, "start", "middle")
    canvas.text(box.right + 14 + 0.6 * size * max(len(t) for t in tick_labels(ticks)), box.y + box.h / 2, label,
                size, rotate=-90)
