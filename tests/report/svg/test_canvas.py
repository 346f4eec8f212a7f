"""The SVG writer: escaped text, accessible title, broken lines at non-finite points, ids unique per figure."""

from __future__ import annotations

import numpy as np

from perception_safety.report.svg.canvas import Canvas, num, wrap

SVG = "{http://www.w3.org/2000/svg}"


def test_text_is_escaped_and_control_characters_dropped(parse_svg, svg_texts):
    c = Canvas(200, 100, "title <b>&</b>", "a 'quoted' \"desc\"", ident="x")
    c.text(10, 20, "<script>alert(1)</script> & ped\x00")
    c.text(10, 40, "two\nlines")
    root = parse_svg(c.svg())  # a markup character left unescaped would break the parse or add elements
    assert svg_texts(root) == ["<script>alert(1)</script> & ped", "two\nlines"]
    assert not list(root.iter(f"{SVG}script"))
    assert root.find(f"{SVG}title").text == "title <b>&</b>"
    assert root.find(f"{SVG}desc").text == "a 'quoted' \"desc\""


def test_title_and_desc_are_named_for_screen_readers(parse_svg):
    root = parse_svg(Canvas(10, 10, "t", ident="fig 1/a").svg())
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    assert root.get("role") == "img"
    assert set(root.get("aria-labelledby").split()) <= ids
    assert all(i.startswith("fig_1_a-") for i in ids)  # the figure's own prefix: inline figures never share an id


def test_clip_ids_are_unique_and_referenced(parse_svg):
    c = Canvas(100, 100, "t", ident="p")
    a, b = c.clip(0, 0, 10, 10), c.clip(5, 5, 10, 10)
    c.rect(0, 0, 20, 20, "#000", clip=a)
    assert a != b
    root = parse_svg(c.svg())
    assert [e.get("id") for e in root.iter(f"{SVG}clipPath")] == ["p-c0", "p-c1"]
    assert root.find(f"{SVG}rect[@clip-path='url(#p-c0)']") is not None


def test_non_finite_points_break_a_line_instead_of_drawing_to_nowhere(parse_svg, path_points):
    c = Canvas(100, 100, "t")
    c.polyline([0, 10, np.nan, 30, 40, np.inf], [1, 2, 3, 4, 5, 6], "#000")
    (path,) = [p for p in parse_svg(c.svg()).iter(f"{SVG}path")]
    assert path.get("d").count("M") == 2
    assert path_points(path.get("d")) == [(0, 1), (10, 2), (30, 4), (40, 5)]
    empty = Canvas(100, 100, "t")
    empty.polyline([np.nan], [np.nan], "#000")
    empty.polygon([np.nan, 1], [1, np.nan], "#000")
    assert not list(parse_svg(empty.svg()).iter(f"{SVG}path"))  # nothing drawable: no element, no broken path


def test_coordinates_have_one_decimal():
    assert [num(v) for v in (1.0, 1.04, 1.06, -0.01, 12.349)] == ["1", "1", "1.1", "0", "12.3"]


def test_wrap_fits_the_width():
    lines = wrap("not computed: the PCD fit failed because fewer than ten samples remain", 120, 10).split("\n")
    assert len(lines) > 1 and all(len(line) * 0.6 * 10 <= 120 for line in lines)


def test_a_dense_scatter_keeps_one_dot_per_half_pixel(parse_svg, path_points):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 20, 5000), rng.uniform(0, 10, 5000)  # 5000 points on 40 x 20 half pixels
    c = Canvas(100, 100, "t")
    c.markers(x, y, "#000", 2.0)
    (path,) = parse_svg(c.svg()).iter(f"{SVG}path")
    dots = path_points(path.get("d"))
    expected = {(round(a * 2) / 2, round(b * 2) / 2) for a, b in zip(x, y, strict=True)}
    assert set(dots) == expected and len(dots) == len(expected) < 1000


def test_a_long_curve_keeps_its_shape_in_fewer_vertices(parse_svg, path_points):
    x = np.linspace(0, 100, 20000)
    y = 50 + 40 * np.sin(x / 10)
    c = Canvas(100, 100, "t")
    c.polyline(x, y, "#000")
    (path,) = parse_svg(c.svg()).iter(f"{SVG}path")
    pts = np.array(path_points(path.get("d")))
    assert len(pts) < 2000
    for vx, vy in pts:  # every vertex is a point of the curve moved by at most a quarter pixel
        lo, hi = np.searchsorted(x, [vx - 0.25, vx + 0.25 + 1e-9])
        assert np.abs(y[lo:hi] - vy).min() <= 0.25 + 1e-9
    assert tuple(pts[0]) == (0, 50) and tuple(pts[-1]) == (100, round(2 * (50 + 40 * np.sin(10))) / 2)
