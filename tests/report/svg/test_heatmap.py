"""Heatmap cells: each cell's fill is the colour map at its value (checked against matplotlib's maps, an
independent implementation), text readable on its fill, missing values grey, the colour bar spans the range."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib import colormaps

from perception_safety.report.svg.axes import Box
from perception_safety.report.svg.canvas import Canvas
from perception_safety.report.svg.heatmap import BLUES, MISSING, VIRIDIS, cells, colour_bar, ink_on

SVG = "{http://www.w3.org/2000/svg}"


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])


@pytest.mark.parametrize("cmap,name,tolerance", [(BLUES, "Blues", 2), (VIRIDIS, "viridis", 16)])
def test_colours_follow_the_reference_map(cmap, name, tolerance):
    """Blues interpolates the same nine ColorBrewer colours; viridis from ten anchors departs by at most 16 of 255
    levels (near its yellow end)."""
    t = np.linspace(0, 1, 41)
    ours = np.array([_rgb(h) for h in cmap.hex(t)])
    reference = np.round(colormaps[name](t)[:, :3] * 255)
    assert np.abs(ours - reference).max() <= tolerance


def test_a_cell_is_filled_with_the_colour_of_its_value(parse_svg, svg_texts):
    values = np.array([[0.0, 0.75], [np.nan, 1.0]])
    c = Canvas(300, 300, "t")
    cells(c, Box(0, 0, 200, 200), values, [["a", "b"], ["c", "d"]], BLUES, 0.0, 1.0)
    root = parse_svg(c.svg())
    rects = {(float(r.get("x")), float(r.get("y"))): r.get("fill") for r in root.iter(f"{SVG}rect")
             if r.get("width") == "100"}
    assert np.abs(_rgb(rects[(100, 0)]) - np.round(colormaps["Blues"](0.75)[:3] * np.array(255))).max() <= 2
    assert rects[(0, 0)] == "#f7fbff" and rects[(100, 100)] == "#08306b" and rects[(0, 100)] == MISSING
    assert svg_texts(root) == ["a", "b", "c", "d"]
    fills = {t.text: t.get("fill") for t in root.iter(f"{SVG}text")}
    assert fills["d"] == "#fff" and fills["a"] != "#fff"  # white on the darkest cell, dark on the palest


def test_value_range_is_respected():
    assert BLUES.hex([-1.0, 2.0]) == ["#f7fbff", "#08306b"]  # clipped to the ends, never extrapolated
    assert ink_on("#440154") == "#fff" and ink_on("#fde725") != "#fff"


def test_colour_bar_ticks_cover_its_range(parse_svg, svg_texts):
    c = Canvas(200, 300, "t")
    colour_bar(c, Box(10, 20, 15, 200), VIRIDIS, 0.0, 15.6, "PCD (m)")
    root = parse_svg(c.svg())
    texts = svg_texts(root)
    assert texts[-1] == "PCD (m)" and float(texts[0]) == 0 and float(texts[-2]) <= 15.6
    ticks = {t.text: float(t.get("y")) for t in root.iter(f"{SVG}text")}
    assert ticks[texts[0]] > ticks[texts[-2]]  # larger values higher up
    assert len(list(root.iter(f"{SVG}linearGradient"))) == 1
