"""A figure drawn once at the size the report shows it and encoded once: the same palette PNG on disk and in the
report (issue 27: the report's fixed cost). Drawing at the shown width replaces drawing large, encoding, decoding,
resampling and encoding again; a standalone figure (``width_px`` None) is saved as asked."""

from __future__ import annotations

import io
import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from perception_safety.report.html import MAX_FIGURE_WIDTH, palette_image
from perception_safety.safe_io import atomic_path, write_bytes

REPORT_WIDTH = MAX_FIGURE_WIDTH
"""Width (px) of a figure drawn for the report: the width the page shows it at."""


Margins = tuple[float, float, float, float, float, float]
"""Fixed margins in inches: left, right, bottom, top (suptitle and panel title), between columns, between rows."""


def fixed_grid(n: int, cols: int, w: float, h: float, sharey: bool = True, margins: Margins | None = None):
    """A grid of ``n`` panels of about ``w`` x ``h`` inches. With ``margins`` the layout is fixed (the labels'
    room known in advance: no layout pass, which costs as much as drawing the figure); else constrained."""
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    width, height = w * cols, h * rows + 0.5
    fig = Figure(figsize=(width, height), layout=None if margins else "constrained")
    if margins:
        left, right, bottom, top, between_cols, between_rows = margins
        panel_w = (width - left - right - (cols - 1) * between_cols) / cols
        panel_h = (height - bottom - top - (rows - 1) * between_rows) / rows
        fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                            wspace=between_cols / panel_w, hspace=between_rows / panel_h)  # fmt: skip
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey)
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    return fig, axes.flat


def save_figure(fig: Figure, path: str | Path, dpi: float, width_px: int | None = REPORT_WIDTH) -> Path:
    """Write ``fig`` to ``path``: for the report (``width_px``, a ``.png``), drawn once at ``dpi`` or less so that
    it is at most ``width_px`` wide and stored as a palette PNG (`html.palette_image`); else ``savefig`` at ``dpi`` (any
    format by suffix). The write is atomic (complete or absent, never through a link)."""
    from PIL import Image

    path = Path(path)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    if width_px is None or path.suffix.lower() != ".png":
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi)
        return path
    fig.set_dpi(min(float(dpi), width_px / fig.get_figwidth()))
    canvas.draw()
    rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    palette_image(rgba.convert("RGB")).save(buf, "PNG")
    return write_bytes(path, buf.getvalue())
