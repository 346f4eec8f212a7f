"""Data-to-pixel axes on a `Canvas`: linear (or log) scales, nice ticks, grid, labels, legend, and a panel grid for
small multiples. Data series are numpy arrays mapped in one vectorised step; non-finite points are left out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.report.svg.canvas import Canvas, FigureDataError, text_width, wrap

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
"""Okabe-Ito colours (distinguishable with every common colour-vision deficiency), blue and orange first."""
GRID = "#d0d7de"
INK = "#1b1f24"


def colour(i: int) -> str:
    """The ``i``-th series colour of `PALETTE` (cycling)."""
    return PALETTE[i % len(PALETTE)]


@dataclass(frozen=True)
class Box:
    """A rectangle in pixels (x, y of the top left corner)."""

    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h


@dataclass(frozen=True)
class Scale:
    """Maps data ``[lo, hi]`` to pixels ``[start, end]`` linearly (of log10 of the data when ``log``)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, values: Sequence[float] | np.ndarray | float) -> np.ndarray:
        v = np.asarray(values, dtype=float)
        lo, hi = self.lo, self.hi
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
            lo, hi = math.log10(lo), math.log10(hi)
        return self.start + (v - lo) * ((self.end - self.start) / (hi - lo))


def nice_step(span: float, target: int = 5) -> float:
    """The step of about ``target`` ticks over ``span``: 1, 2, 2.5 or 5 times a power of ten, the one nearest
    (on a log scale) to ``span / target``."""
    raw = span / max(target, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    return min((m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0)), key=lambda s: abs(math.log(s / raw)))


def nice_ticks(lo: float, hi: float, target: int = 5, integer: bool = False) -> np.ndarray:
    """Multiples of `nice_step` inside ``[lo, hi]`` (whole numbers only when ``integer``)."""
    step = nice_step(hi - lo, target)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return np.round(np.arange(first, last + 1) * step, 10)


def tick_labels(ticks: np.ndarray) -> list[str]:
    """Tick texts with the decimals their step needs (``0.25`` steps: two decimals), ``0`` never ``-0``."""
    if ticks.size < 2:
        return [f"{v:g}" for v in ticks]
    step = float(np.min(np.diff(ticks)))
    decimals = 0
    while decimals < 6 and abs(round(step * 10**decimals) - step * 10**decimals) > 1e-6 * 10**decimals:
        decimals += 1
    texts = [f"{v:.{decimals}f}" for v in ticks]
    return [t[1:] if t.startswith("-") and float(t) == 0 else t for t in texts]


def limits(*arrays: Sequence[float] | np.ndarray, pad: float = 0.05, what: str = "figure") -> tuple[float, float]:
    """The range of the finite values of ``arrays`` widened by ``pad`` of its span (a single value: by 0.5);
    no finite value is a `FigureDataError` naming ``what``."""
    finite = [a[np.isfinite(a)] for a in (np.asarray(x, dtype=float).ravel() for x in arrays)]
    values = np.concatenate(finite) if finite else np.empty(0)
    if values.size == 0:
        raise FigureDataError(f"{what}: no finite value to draw (empty, NaN or inf data)")
    lo, hi = float(values.min()), float(values.max())
    span = hi - lo if hi > lo else 1.0 / (1 + 2 * pad)
    return lo - pad * span, hi + pad * span


def union(ranges: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The smallest range holding every (lo, hi) of ``ranges`` (a shared axis of small multiples)."""
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def panel_grid(n: int, cols: int, panel: tuple[float, float], margins: tuple[float, float, float, float],
               gaps: tuple[float, float]) -> tuple[float, float, list[Box]]:
    """``n`` panels of ``panel`` (w, h) pixels on ``cols`` columns with ``margins`` (left, right, top, bottom) and
    ``gaps`` (between columns, between rows); returns the figure's width, height and the panels' boxes."""
    cols = max(1, min(cols, n))
    rows = math.ceil(max(n, 1) / cols)
    left, right, top, bottom = margins
    width = left + right + cols * panel[0] + (cols - 1) * gaps[0]
    height = top + bottom + rows * panel[1] + (rows - 1) * gaps[1]
    boxes = [Box(left + (i % cols) * (panel[0] + gaps[0]), top + (i // cols) * (panel[1] + gaps[1]), *panel)
             for i in range(n)]
    return width, height, boxes


@dataclass(frozen=True)
class LegendEntry:
    """One legend line: a line swatch (``dash`` for dashed), a marker, or a filled patch."""

    label: str
    color: str
    kind: str = "line"  # line, marker, patch, bar (the vertical tick marker)
    dash: str | None = None
    opacity: float | None = None
    width: float = 1.5


class Axes:
    """One panel: scales for ``xlim``/``ylim`` onto ``box``, data drawn clipped to it, legend entries collected
    from the ``label`` of each drawing call and the pixels the data cover (for the legend's placement)."""

    def __init__(self, canvas: Canvas, box: Box, xlim: tuple[float, float], ylim: tuple[float, float],
                 ylog: bool = False) -> None:
        for name, (lo, hi) in (("x", xlim), ("y", ylim)):
            if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo) or (name == "y" and ylog and lo <= 0):
                raise FigureDataError(f"{canvas.title}: {name} range ({lo}, {hi}) cannot be drawn")
        self.canvas, self.box = canvas, box
        self.x = Scale(xlim[0], xlim[1], box.x, box.right)
        self.y = Scale(ylim[0], ylim[1], box.bottom, box.y, log=ylog)
        self.clip = canvas.clip(box.x, box.y, box.w, box.h)
        self.entries: list[LegendEntry] = []
        self._covered: list[np.ndarray] = []

    def _cover(self, px: np.ndarray, py: np.ndarray) -> None:
        if px.size > 1:  # the segments between vertices cover the legend too: 8 points per segment
            t = np.linspace(0.0, 1.0, 8)
            px = (px[:-1, None] + np.diff(px)[:, None] * t).ravel()
            py = (py[:-1, None] + np.diff(py)[:, None] * t).ravel()
        self._covered.append(np.column_stack([px, py]))

    def _label(self, entry: LegendEntry) -> None:
        if entry.label and all(e.label != entry.label for e in self.entries):
            self.entries.append(entry)

    # data ---------------------------------------------------------------------------------------------------------
    def line(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, color: str, width: float = 1.5,
             dash: str | None = None, label: str = "", markers: bool = False) -> None:
        px, py = self.x(x), self.y(y)
        self.canvas.polyline(px, py, color, width, dash, clip=self.clip)
        if markers:
            self.canvas.markers(px, py, color, 2.5, clip=self.clip)
        self._cover(px, py)
        self._label(LegendEntry(label, color, "line", dash, width=width))

    def scatter(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, color: str, size: float = 2.5,
                opacity: float | None = None, shape: str = "circle", hollow: bool = False, label: str = "") -> None:
        px, py = self.x(x), self.y(y)
        self.canvas.markers(px, py, color, size, shape, hollow, opacity, clip=self.clip)
        self._covered.append(np.column_stack([px, py]))
        self._label(LegendEntry(label, color, "bar" if shape == "bar" else "marker", opacity=opacity))

    def band(self, x: Sequence[float] | np.ndarray, lo: Sequence[float] | np.ndarray,
             hi: Sequence[float] | np.ndarray, color: str, opacity: float = 0.2, label: str = "") -> None:
        """The area between ``lo`` and ``hi`` over ``x`` (an interval band)."""
        px = self.x(x)
        self.canvas.polygon(np.concatenate([px, px[::-1]]), np.concatenate([self.y(hi), self.y(lo)[::-1]]), color,
                            opacity, clip=self.clip)
        self._label(LegendEntry(label, color, "patch", opacity=opacity))

    def errorbars(self, x: Sequence[float] | np.ndarray, lo: Sequence[float] | np.ndarray,
                  hi: Sequence[float] | np.ndarray, color: str, cap: float = 3.0) -> None:
        """Vertical bars from ``lo`` to ``hi`` at each ``x`` with caps of half-width ``cap`` pixels."""
        px, plo, phi = self.x(x), self.y(lo), self.y(hi)
        ok = np.isfinite(px) & np.isfinite(plo) & np.isfinite(phi)
        for a, b, c in zip(px[ok].tolist(), plo[ok].tolist(), phi[ok].tolist(), strict=True):
            self.canvas.polyline([a, a], [b, c], color, 1.2, clip=self.clip)
            for yy in (b, c):
                self.canvas.polyline([a - cap, a + cap], [yy, yy], color, 1.2, clip=self.clip)
        self._covered.append(np.column_stack([np.repeat(px, 2), np.concatenate([plo, phi])]))

    def hline(self, y: float, color: str, width: float = 1.0, dash: str | None = None, label: str = "") -> None:
        py = float(self.y(y))
        self.canvas.line(self.box.x, py, self.box.right, py, color, width, dash, clip=self.clip)
        self._label(LegendEntry(label, color, "line", dash, width=width))

    def vline(self, x: float, color: str, width: float = 1.0, dash: str | None = None, label: str = "") -> None:
        px = float(self.x(x))
        self.canvas.line(px, self.box.y, px, self.box.bottom, color, width, dash, clip=self.clip)
        self._label(LegendEntry(label, color, "line", dash, width=width))

    def vspan(self, x0: float, x1: float, color: str, opacity: float = 0.1, label: str = "") -> None:
        a, b = sorted((float(self.x(x0)), float(self.x(x1))))
        self.canvas.rect(a, self.box.y, b - a, self.box.h, color, opacity=opacity, clip=self.clip)
        self._label(LegendEntry(label, color, "patch", opacity=opacity))

    def bars(self, x: Sequence[float] | np.ndarray, heights: Sequence[float] | np.ndarray, width: float, color: str,
             label: str = "") -> None:
        """Bars of data-``width`` centred on ``x`` from 0 to ``heights`` (non-finite heights: no bar)."""
        px0, px1 = self.x(np.asarray(x) - width / 2), self.x(np.asarray(x) + width / 2)
        base, top = float(self.y(0.0)), self.y(heights)
        for a, b, t in zip(px0.tolist(), px1.tolist(), top.tolist(), strict=True):
            if math.isfinite(t):
                self.canvas.rect(a, min(base, t), b - a, abs(base - t), color, clip=self.clip)
                self._covered.append(np.array([[a, t], [b, t], [(a + b) / 2, t]]))
        self._label(LegendEntry(label, color, "patch"))

    def note(self, text: str, size: float = 11.0) -> None:
        """A message in the middle of the panel (why nothing is drawn), in a framed empty panel."""
        self.canvas.rect(self.box.x, self.box.y, self.box.w, self.box.h, "#f6f8fa", GRID, 1.0)
        self.canvas.text(self.box.x + self.box.w / 2, self.box.y + self.box.h / 2, wrap(text, self.box.w - 16, size),
                         size, valign="middle")

    # decoration ---------------------------------------------------------------------------------------------------
    def frame(self, xticks: np.ndarray | None = None, yticks: np.ndarray | None = None, xlabels: bool = True,
              ylabels: bool = True, grid: bool = True, size: float = 10.0, xtick_text: Sequence[str] | None = None,
              rotate: float = 0.0) -> None:
        """Grid, ticks with labels (nice ones by default; ``xtick_text`` names categorical ticks, ``rotate`` turns
        them) and the panel's frame."""
        c, b = self.canvas, self.box
        xt = nice_ticks(self.x.lo, self.x.hi) if xticks is None else np.asarray(xticks, dtype=float)
        yt = self._yticks() if yticks is None else np.asarray(yticks, dtype=float)
        xs, ys = self.x(xt), self.y(yt)
        if grid:
            for px in xs:
                c.line(px, b.y, px, b.bottom, GRID, 0.8)
            for py in ys:
                c.line(b.x, py, b.right, py, GRID, 0.8)
        c.rect(b.x, b.y, b.w, b.h, "none", INK, 1.0)
        texts = list(xtick_text) if xtick_text is not None else tick_labels(xt)
        for px, t in zip(xs, texts, strict=True):
            c.line(px, b.bottom, px, b.bottom + 4, INK, 1.0)
            if xlabels and rotate:
                c.text(px + 3, b.bottom + 8, t, size, "end", "top", rotate=-rotate)
            elif xlabels:
                c.text(px, b.bottom + 6, t, size, valign="top")
        ylab = self._ylabels(yt)
        for py, t in zip(ys, ylab, strict=True):
            c.line(b.x - 4, py, b.x, py, INK, 1.0)
            if ylabels:
                c.text(b.x - 6, py, t, size, "end", "middle")

    def _yticks(self) -> np.ndarray:
        if not self.y.log:
            return nice_ticks(self.y.lo, self.y.hi)
        return 10.0 ** np.arange(math.ceil(math.log10(self.y.lo) - 1e-9), math.floor(math.log10(self.y.hi) + 1e-9) + 1)

    def _ylabels(self, ticks: np.ndarray) -> list[str]:
        return [f"1e{round(math.log10(v))}" for v in ticks] if self.y.log else tick_labels(ticks)

    def top_axis(self, factor: float, label: str, size: float = 10.0) -> None:
        """A second x axis on top for the same data in another unit (value x ``factor``), with nice ticks."""
        c, b = self.canvas, self.box
        ticks = nice_ticks(self.x.lo * factor, self.x.hi * factor)
        for px, t in zip(self.x(ticks / factor), tick_labels(ticks), strict=True):
            c.line(px, b.y - 4, px, b.y, INK, 1.0)
            c.text(px, b.y - 6, t, size)
        c.text(b.x + b.w / 2, b.y - 8 - 1.2 * size, label, size)

    def labels(self, xlabel: str = "", ylabel: str = "", title: str = "", size: float = 11.0,
               xlabel_gap: float = 22.0, ylabel_gap: float = 40.0, title_gap: float = 6.0) -> None:
        """Axis labels (``*_gap`` pixels from the frame) and the panel title above it."""
        c, b = self.canvas, self.box
        if xlabel:
            c.text(b.x + b.w / 2, b.bottom + xlabel_gap, xlabel, size, valign="top")
        if ylabel:
            c.text(b.x - ylabel_gap, b.y + b.h / 2, ylabel, size, rotate=-90)
        if title:
            fitted = min(size + 1, max(9.0, b.w / max(text_width(title, 1.0), 1.0)))  # shrink to fit, then wrap
            lines = wrap(title, b.w, fitted).split("\n")
            c.text(b.x + b.w / 2, b.y - title_gap - (len(lines) - 1) * 1.2 * fitted, "\n".join(lines), fitted,
                   weight="600")

    def legend(self, size: float = 9.0, title: str = "", loc: str = "best", ncol: int = 1) -> None:
        """The collected entries in a framed box at ``loc`` (a corner or edge middle, or ``best``: the place covering
        the fewest drawn data points, corners first)."""
        if not self.entries:
            return
        rows = math.ceil(len(self.entries) / ncol)
        col_w = 36 + max(text_width(e.label, size) for e in self.entries)
        w = max(ncol * col_w, text_width(title, size) + 8) + 8
        line_h = 1.35 * size
        h = rows * line_h + 8 + (line_h if title else 0)
        b = self.box
        mx, my = b.x + (b.w - w) / 2, b.y + (b.h - h) / 2
        corners = {"upper right": (b.right - w - 6, b.y + 6), "upper left": (b.x + 6, b.y + 6),
                   "lower left": (b.x + 6, b.bottom - h - 6), "lower right": (b.right - w - 6, b.bottom - h - 6),
                   "right": (b.right - w - 6, my), "left": (b.x + 6, my), "upper center": (mx, b.y + 6),
                   "lower center": (mx, b.bottom - h - 6)}
        x, y = corners[loc] if loc in corners else self._best(corners, w, h)
        c = self.canvas
        c.rect(x, y, w, h, "#fff", "#8c959f", 0.8, opacity=0.85)
        top = y + 4
        if title:
            c.text(x + w / 2, top, title, size, valign="top", weight="600")
            top += line_h
        for i, e in enumerate(self.entries):
            ex, ey = x + 4 + (i // rows) * col_w, top + (i % rows) * line_h + line_h / 2
            swatch(c, ex, ey, e)
            c.text(ex + 24, ey, e.label, size, "start", "middle")

    def _best(self, corners: dict[str, tuple[float, float]], w: float, h: float) -> tuple[float, float]:
        pts = np.concatenate(self._covered) if self._covered else np.empty((0, 2))
        pts = pts[np.isfinite(pts).all(axis=1)]

        def inside(xy: tuple[float, float]) -> int:
            return int(np.count_nonzero((pts[:, 0] >= xy[0]) & (pts[:, 0] <= xy[0] + w)
                                        & (pts[:, 1] >= xy[1]) & (pts[:, 1] <= xy[1] + h)))

        return min(corners.values(), key=inside)


def swatch(c: Canvas, x: float, y: float, e: LegendEntry) -> None:
    """The 20-pixel sample of a legend entry with its left end at (x, y)."""
    if e.kind == "patch":
        c.rect(x, y - 5, 20, 10, e.color, opacity=e.opacity)
    elif e.kind == "marker":
        c.markers([x + 10], [y], e.color, 3.0, opacity=e.opacity)
    elif e.kind == "bar":
        c.markers([x + 10], [y], e.color, 4.0, "bar")
    else:
        c.line(x, y, x + 20, y, e.color, e.width, e.dash)


def legend_row(canvas: Canvas, entries: Sequence[LegendEntry], y: float, size: float = 10.0) -> float:
    """One legend for a whole figure: the entries side by side, centred, on as many rows as the width needs from
    ``y`` down; returns the height used."""
    widths = [30 + text_width(e.label, size) + 14 for e in entries]
    rows: list[list[int]] = [[]]
    for i, w in enumerate(widths):
        if rows[-1] and sum(widths[j] for j in rows[-1]) + w > canvas.width - 40:
            rows.append([])
        rows[-1].append(i)
    step = 1.5 * size
    for r, row in enumerate(rows):
        x = (canvas.width - sum(widths[i] for i in row)) / 2
        for i in row:
            swatch(canvas, x, y + r * step + step / 2, entries[i])
            canvas.text(x + 26, y + r * step + step / 2, entries[i].label, size, "start", "middle")
            x += widths[i]
    return len(rows) * step


def suptitle(canvas: Canvas, text: str, size: float = 13.0) -> None:
    """The figure's title, centred at the top (lines split at newlines)."""
    canvas.text(canvas.width / 2, 8, text, size, valign="top", weight="600")
