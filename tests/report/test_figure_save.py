"""Report figures drawn once at the width the page shows them: one palette PNG, the same bytes on disk and in the
report, the picture matplotlib draws at that size (colours kept), standalone figures saved as asked."""

from __future__ import annotations

import io

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from PIL import Image

from perception_safety.report.figure_save import REPORT_WIDTH, save_figure
from perception_safety.report.html import PALETTE, Section


def _figure() -> Figure:
    fig = Figure(figsize=(11.0, 4.0))
    ax = fig.subplots()
    ax.imshow(np.linspace(0, 1, 12).reshape(3, 4), cmap="Blues", vmin=0, vmax=1)  # includes the palest cell
    ax.plot([0, 3], [0, 2], color="tab:orange")
    ax.set_title("a title")
    return fig


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def test_a_report_figure_is_drawn_at_the_shown_width_and_encoded_once(tmp_path):
    path = save_figure(_figure(), tmp_path / "f.png", 100)
    png = path.read_bytes()
    im = Image.open(io.BytesIO(png))
    assert im.format == "PNG" and im.mode == "P" and len(im.getpalette()) // 3 <= 256
    assert im.size == (REPORT_WIDTH, int(4.0 * REPORT_WIDTH / 11.0))  # 11 in at 100 dpi would be 1100 px
    sec = Section("s").figure(png)
    assert sec.blocks[0][1][0] is png  # embedded as written: not decoded, resampled and encoded again
    # the picture matplotlib draws at that size, independently: savefig at the same dpi, full colour
    ref = io.BytesIO()
    _figure().savefig(ref, format="png", dpi=REPORT_WIDTH / 11.0)
    got, want = _pixels(png), _pixels(ref.getvalue())
    assert got.shape == want.shape
    assert np.abs(got - want).mean() < 1.5
    assert (got[2, 2] == 255).all()  # the page stays white
    palest = np.round(np.asarray(colormaps["Blues"](0.0)[:3]) * 255).astype(int)  # the cell of value 0
    cell = np.all(want == palest, axis=2)
    assert cell.sum() > 100 and np.abs(got[cell] - palest).max() <= 3  # not merged into the white page
    assert len(np.unique(got.reshape(-1, 3), axis=0)) <= PALETTE


def test_a_figure_narrower_than_the_page_keeps_its_dpi(tmp_path):
    fig = Figure(figsize=(4.0, 3.0))
    fig.subplots().plot([0, 1])
    im = Image.open(save_figure(fig, tmp_path / "f.png", 110))
    assert im.size == (440, 330)


def test_a_standalone_figure_is_saved_as_asked(tmp_path):
    im = Image.open(save_figure(_figure(), tmp_path / "f.png", 100, None))
    assert im.size == (1100, 400) and im.mode in ("RGB", "RGBA")  # the commands' files: their dpi, full colour
    svg = save_figure(_figure(), tmp_path / "f.svg", 100).read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg  # any matplotlib format by its suffix
