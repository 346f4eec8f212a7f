"""A figure written once as SVG text: the same document on disk and inline in the report (issue 27: the report's
fixed cost). Drawn at the size the page shows it, so its text is the size it reads at; no raster, no encoder."""

from __future__ import annotations

import math
from pathlib import Path

from perception_safety.report.svg.canvas import Canvas
from perception_safety.safe_io import write_text

REPORT_WIDTH = 960
"""Width (px) a report figure is drawn for: the page is at most 1100 px wide (the style sheet scales it down on a
narrower screen)."""


def save_svg(canvas: Canvas, path: str | Path) -> Path:
    """Write ``canvas`` as an SVG file at ``path`` with the suffix ``.svg`` (atomic: complete or absent, never
    through a link); returns the path written."""
    return write_text(Path(path).with_suffix(".svg"), canvas.svg())


def columns_for(n: int, most: int) -> int:
    """Columns of a small-multiples grid of ``n`` panels: at most ``most``, rows filled evenly (5 panels on 3 + 2)."""
    rows = math.ceil(max(n, 1) / most)
    return max(1, math.ceil(max(n, 1) / rows))

