"""An SVG document built element by element: escaped text, rectangles, lines, polylines, bands, markers, clip paths.

Coordinates are pixels (origin top left, y down) written with one decimal: the files stay small and the figure
is exact to a tenth of a pixel. Every figure carries a <title> and a <desc> named by ``aria-labelledby``.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Sequence

import numpy as np

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
CHAR_WIDTH = 0.6
"""Average advance of one glyph of `FONT`, in font sizes: the layout's estimate of a text's width."""
LINE_HEIGHT = 1.2
"""Distance between the baselines of a multi-line text, in font sizes."""
DENSE = 400
"""Markers above this many are snapped to half pixels and deduplicated (a scatter of thousands of samples)."""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class FigureDataError(ValueError):
    """Data a figure cannot draw (no finite value where one is needed): the message names the figure and why."""


def escape(text: object) -> str:
    """``text`` safe inside an SVG element or a quoted attribute: markup escaped, XML-illegal control characters
    dropped (a label read from a bag may hold them)."""
    return html.escape(_CONTROL.sub("", str(text)), quote=True)


def num(value: float) -> str:
    """A coordinate with one decimal, without a trailing ``.0`` (and never ``-0``)."""
    s = f"{value:.1f}"
    if s.endswith(".0"):
        s = s[:-2]
    return "0" if s == "-0" else s


def text_width(text: str, size: float) -> float:
    """Estimated width in pixels of ``text`` (its longest line) at font ``size``."""
    return max((len(line) for line in str(text).split("\n")), default=0) * CHAR_WIDTH * size


def wrap(text: str, width_px: float, size: float) -> str:
    """``text`` broken into lines that fit ``width_px`` at font ``size`` (its own line breaks kept)."""
    chars = max(8, int(width_px / (CHAR_WIDTH * size)))
    return "\n".join(line for part in str(text).split("\n") for line in (textwrap.wrap(part, chars) or [""]))


def _attrs(**kw: object) -> str:
    """`` name="value"`` pairs, underscores in names written as dashes; None values left out."""
    return "".join(f' {k.replace("_", "-")}="{escape(v)}"' for k, v in kw.items() if v is not None)


def _runs(xs: np.ndarray, ys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The finite runs of a polyline: a NaN or inf point breaks the line instead of drawing to nowhere."""
    ok = np.isfinite(xs) & np.isfinite(ys)
    if ok.all():
        return [(xs, ys)] if xs.size else []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.view(np.int8), [0]))))
    return [(xs[a:b], ys[a:b]) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _thin(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Above `DENSE` vertices: snapped to half pixels, a vertex equal to the one before it dropped (a curve through
    thousands of sample distances has only as many distinct half pixels as the panel is wide)."""
    if xs.size <= DENSE:
        return xs, ys
    pts = np.round(np.column_stack([xs, ys]) * 2) / 2
    keep = np.concatenate(([True], np.any(np.diff(pts, axis=0) != 0, axis=1)))
    return pts[keep, 0], pts[keep, 1]


def _path(xs: np.ndarray, ys: np.ndarray, close: bool = False) -> str:
    xs, ys = _thin(xs, ys)
    pts = " ".join(f"{num(x)} {num(y)}" for x, y in zip(xs.tolist(), ys.tolist(), strict=True))
    return f"M{pts}{'Z' if close else ''}" if pts else ""


class Canvas:
    """One figure of ``width`` x ``height`` pixels; `svg` gives the document. ``ident`` prefixes the ids (clip paths,
    title) so that several figures inline in one page never share one."""

    def __init__(self, width: float, height: float, title: str, desc: str = "", ident: str = "fig") -> None:
        self.width, self.height = float(width), float(height)
        self.title, self.desc = title, desc
        self.ident = re.sub(r"[^A-Za-z0-9_-]", "_", ident) or "fig"
        self._defs: list[str] = []
        self._body: list[str] = []

    def clip(self, x: float, y: float, w: float, h: float) -> str:
        """A rectangular clip path; returns the value for an element's ``clip`` argument."""
        cid = f"{self.ident}-c{len(self._defs)}"
        self._defs.append(f'<clipPath id="{cid}"><rect{_attrs(x=num(x), y=num(y), width=num(w), height=num(h))}/>'
                          "</clipPath>")
        return f"url(#{cid})"

    def gradient(self, colours: Sequence[str]) -> str:
        """A vertical linear gradient through ``colours`` (first at the bottom); returns the ``fill`` value."""
        gid = f"{self.ident}-g{len(self._defs)}"
        last = max(len(colours) - 1, 1)
        stops = "".join(f'<stop offset="{num(100 * i / last)}%" stop-color="{escape(c)}"/>'
                        for i, c in enumerate(colours))
        self._defs.append(f'<linearGradient id="{gid}" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient>')
        return f"url(#{gid})"

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "none", stroke: str | None = None,
             width: float | None = None, opacity: float | None = None, clip: str | None = None) -> None:
        self._el("rect", x=num(x), y=num(y), width=num(w), height=num(h), fill=fill, stroke=stroke, stroke_width=width,
                 fill_opacity=opacity, clip_path=clip)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#000", width: float = 1.0,
             dash: str | None = None, opacity: float | None = None, clip: str | None = None) -> None:
        self._el("line", x1=num(x1), y1=num(y1), x2=num(x2), y2=num(y2), stroke=stroke, stroke_width=width,
                 stroke_dasharray=dash, stroke_opacity=opacity, clip_path=clip)

    def polyline(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, stroke: str,
                 width: float = 1.5, dash: str | None = None, opacity: float | None = None,
                 clip: str | None = None) -> None:
        """A line through the points (pixels); non-finite points break it."""
        d = "".join(_path(a, b) for a, b in _runs(np.asarray(xs, float), np.asarray(ys, float)))
        if d:
            self._el("path", d=d, fill="none", stroke=stroke, stroke_width=width, stroke_dasharray=dash,
                     stroke_opacity=opacity, stroke_linejoin="round", clip_path=clip)

    def polygon(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, fill: str,
                opacity: float | None = None, clip: str | None = None) -> None:
        """A filled area (an interval band: upper edge forward, lower edge back); non-finite points left out."""
        x, y = np.asarray(xs, float), np.asarray(ys, float)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() >= 3:
            self._el("path", d=_path(x[ok], y[ok], close=True), fill=fill, fill_opacity=opacity, clip_path=clip)

    def markers(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, color: str,
                size: float = 3.0, shape: str = "circle", hollow: bool = False, opacity: float | None = None,
                clip: str | None = None) -> None:
        """Markers of radius ``size`` at the points, one path for all: ``circle`` (a round dot: a zero-length segment
        with round caps, 8 bytes a point) or ``bar`` (a short vertical tick); ``hollow`` circles are white inside.
        Non-finite points are left out. Above `DENSE` points they are snapped to half pixels and repeats dropped: one
        path is painted as the union of its dots, so a repeat changes no pixel."""
        x, y = np.asarray(xs, float).ravel(), np.asarray(ys, float).ravel()
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if x.size > DENSE:
            x, y = np.unique(np.round(np.column_stack([x, y]) * 2) / 2, axis=0).T
        pts = zip(x.tolist(), y.tolist(), strict=True)
        if shape == "bar":
            d = "".join(f"M{num(a)} {num(b - size)}v{num(2 * size)}" for a, b in pts)
            style = {"fill": "none", "stroke": color, "stroke_width": 1.0, "stroke_opacity": opacity}
        elif hollow:
            r = num(size)
            d = "".join(f"M{num(a - size)} {num(b)}a{r} {r} 0 1 0 {num(2 * size)} 0a{r} {r} 0 1 0 -{num(2 * size)} 0"
                        for a, b in pts)
            style = {"fill": "#fff", "stroke": color, "stroke_width": 1.2}
        else:
            d = "".join(f"M{num(a)} {num(b)}h0" for a, b in pts)
            style = {"fill": "none", "stroke": color, "stroke_width": num(2 * size), "stroke_linecap": "round",
                     "stroke_opacity": opacity}
        if d:
            self._el("path", d=d, **style, clip_path=clip)

    def text(self, x: float, y: float, text: str, size: float = 11.0, anchor: str = "middle", valign: str = "baseline",
             fill: str = "#1b1f24", weight: str | None = None, rotate: float | None = None) -> None:
        """``text`` (lines split at newlines) at (x, y): ``anchor`` start/middle/end, ``valign`` baseline (the first
        line's baseline at y), middle (the block centred on y) or top (the block starting at y); ``rotate`` in
        degrees about (x, y)."""
        lines = str(text).split("\n")
        step = LINE_HEIGHT * size
        first = {"baseline": y, "middle": y - (len(lines) - 1) * step / 2 + 0.35 * size,
                 "top": y + 0.8 * size}[valign]
        transform = None if rotate is None else f"rotate({num(rotate)} {num(x)} {num(y)})"
        head = _attrs(x=num(x), y=num(first), font_size=num(size), text_anchor=anchor, fill=fill, font_weight=weight,
                      transform=transform)
        if len(lines) == 1:
            self._body.append(f"<text{head}>{escape(lines[0])}</text>")
            return
        spans = "".join(f'<tspan x="{num(x)}" dy="{num(0 if i == 0 else step)}">{escape(line)}</tspan>'
                        for i, line in enumerate(lines))
        self._body.append(f"<text{head}>{spans}</text>")

    def _el(self, tag: str, **attrs: object) -> None:
        self._body.append(f"<{tag}{_attrs(**attrs)}/>")

    def svg(self) -> str:
        """The document: an ``<svg>`` element with its title, description, definitions and drawing."""
        tid, did = f"{self.ident}-title", f"{self.ident}-desc"
        head = _attrs(xmlns="http://www.w3.org/2000/svg", width=num(self.width), height=num(self.height),
                      viewBox=f"0 0 {num(self.width)} {num(self.height)}", role="img", aria_labelledby=f"{tid} {did}",
                      font_family=FONT)
        defs = f"<defs>{''.join(self._defs)}</defs>" if self._defs else ""
        return (f'<svg{head} class="fig"><title id="{tid}">{escape(self.title)}</title>'
                f'<desc id="{did}">{escape(self.desc or self.title)}</desc>{defs}'
                f'<rect width="100%" height="100%" fill="#fff"/>' + "\n".join(self._body) + "</svg>\n")
