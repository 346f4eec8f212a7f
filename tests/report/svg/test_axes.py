"""Axes: data land on the pixels a linear map of the limits onto the panel gives; ticks are nice numbers covering
the data; non-finite data give a named error; the legend avoids the data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.report.svg.axes import Axes, Box, limits, nice_ticks, panel_grid, tick_labels
from perception_safety.report.svg.canvas import Canvas, FigureDataError

SVG = "{http://www.w3.org/2000/svg}"
BOX = Box(100.0, 50.0, 400.0, 300.0)


def _pixel(x: float, y: float, xlim=(0.0, 10.0), ylim=(0.0, 1.0)) -> tuple[float, float]:
    """The pixel of (x, y), computed here: x grows right from the box's left edge, y grows up from its bottom."""
    return (BOX.x + (x - xlim[0]) / (xlim[1] - xlim[0]) * BOX.w,
            BOX.y + BOX.h - (y - ylim[0]) / (ylim[1] - ylim[0]) * BOX.h)


def test_a_point_lands_on_its_pixel(parse_svg, path_points):
    c = Canvas(600, 400, "t")
    ax = Axes(c, BOX, (0.0, 10.0), (0.0, 1.0))
    ax.line([2.5, 7.0], [0.25, 0.9], "#000")
    ax.scatter([4.0], [0.6], "#f00", size=3.0)
    ax.vline(8.2, "#00f")
    paths = list(parse_svg(c.svg()).iter(f"{SVG}path"))
    line, marker = paths
    for got, want in zip(path_points(line.get("d")), [_pixel(2.5, 0.25), _pixel(7.0, 0.9)], strict=True):
        assert got == pytest.approx(want, abs=0.05)
    (dot,) = path_points(marker.get("d"))  # a dot: round caps of width 2 r on a zero-length segment
    assert dot == pytest.approx(_pixel(4.0, 0.6), abs=0.06) and float(marker.get("stroke-width")) == 6.0
    vline = next(parse_svg(c.svg()).iter(f"{SVG}line"))
    assert float(vline.get("x1")) == pytest.approx(_pixel(8.2, 0)[0], abs=0.05)
    assert (float(vline.get("y1")), float(vline.get("y2"))) == (BOX.y, BOX.bottom)


@pytest.mark.parametrize("lo,hi", [(0, 1), (-0.02, 1.02), (2.7, 15.9), (0.001, 0.0042), (-350, 12), (1e5, 3.3e5),
                                   (7, 7.5), (-1, -0.2)])
def test_ticks_are_nice_numbers_covering_the_range(lo, hi):
    ticks = nice_ticks(lo, hi)
    assert 3 <= ticks.size <= 11
    assert lo - 1e-12 <= ticks.min() and ticks.max() <= hi + 1e-12
    step = ticks[1] - ticks[0]
    np.testing.assert_allclose(np.diff(ticks), step)
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert min(abs(mantissa - m) for m in (1, 2, 2.5, 5)) < 1e-9
    assert ticks.min() - lo < step + 1e-12 and hi - ticks.max() < step + 1e-12  # no gap of a whole step at an end
    assert all(abs(t / step - round(t / step)) < 1e-9 for t in ticks)


def test_tick_labels_show_the_decimals_their_step_needs():
    assert tick_labels(np.array([0.0, 0.25, 0.5])) == ["0.00", "0.25", "0.50"]
    assert tick_labels(np.array([-0.2, 0.0, 0.2])) == ["-0.2", "0.0", "0.2"]
    assert tick_labels(np.array([10.0, 20.0])) == ["10", "20"]
    assert tick_labels(nice_ticks(1, 5, integer=True)) == ["1", "2", "3", "4", "5"]


def test_non_finite_or_empty_data_give_a_named_error():
    with pytest.raises(FigureDataError, match="recall panel: no finite value"):
        limits([np.nan, np.inf], [], what="recall panel")
    with pytest.raises(FigureDataError, match="my figure: y range"):
        Axes(Canvas(10, 10, "my figure"), BOX, (0, 1), (np.nan, 1))
    assert limits([3.0, np.nan, 5.0], pad=0.0) == (3.0, 5.0)
    lo, hi = limits([2.0])  # one value: a range around it, never zero wide
    assert lo < 2.0 < hi


def test_legend_goes_to_the_corner_without_data(parse_svg, svg_texts):
    c = Canvas(600, 400, "t")
    ax = Axes(c, BOX, (0.0, 10.0), (0.0, 1.0))
    x = np.linspace(0, 10, 50)
    ax.scatter(x, np.where(x < 5, 0.95, 0.05), "#000", label="samples")  # upper left and lower right are full
    ax.scatter(x[x > 5], np.full((x > 5).sum(), 0.95), "#000")  # upper right too
    ax.legend()
    root = parse_svg(c.svg())
    frame = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#fff" and r.get("stroke")][-1]
    assert float(frame.get("x")) < BOX.x + BOX.w / 2 and float(frame.get("y")) > BOX.y + BOX.h / 2  # lower left
    assert "samples" in svg_texts(root)


def test_log_axis_maps_decades_evenly_and_drops_non_positive_values(parse_svg, path_points):
    c = Canvas(600, 400, "t")
    ax = Axes(c, BOX, (0.0, 10.0), (1e-3, 1.0), ylog=True)
    ax.line([1, 2, 3], [1e-2, 0.0, 1e-1], "#000")
    pts = path_points(next(parse_svg(c.svg()).iter(f"{SVG}path")).get("d"))
    assert [round(p[1], 1) for p in pts] == [round(BOX.bottom - BOX.h / 3, 1), round(BOX.bottom - 2 * BOX.h / 3, 1)]
    ax.frame()
    assert {"1e-3", "1e-2", "1e-1", "1e0"} <= {t.text for t in parse_svg(c.svg()).iter(f"{SVG}text")}


def test_panel_grid_places_panels_row_by_row():
    w, h, boxes = panel_grid(5, 3, (100, 50), (10, 5, 20, 30), (8, 40))
    assert (w, h) == (10 + 5 + 3 * 100 + 2 * 8, 20 + 30 + 2 * 50 + 40)
    assert [(b.x, b.y) for b in boxes] == [(10, 20), (118, 20), (226, 20), (10, 110), (118, 110)]


def test_legend_moves_to_an_edge_middle_when_every_corner_holds_data(parse_svg):
    c = Canvas(600, 400, "t")
    ax = Axes(c, BOX, (0.0, 10.0), (0.0, 1.0))
    x = np.linspace(0, 10, 60)
    ax.scatter(x, np.full(x.size, 0.95), "#000", label="top")
    ax.scatter(x, np.full(x.size, 0.05), "#000", label="bottom")
    ax.legend()
    frame = [r for r in parse_svg(c.svg()).iter(f"{SVG}rect") if r.get("fill") == "#fff" and r.get("stroke")][-1]
    top, height = float(frame.get("y")), float(frame.get("height"))
    assert _pixel(0, 0.95)[1] < top and top + height < _pixel(0, 0.05)[1]  # between the two rows of points
