"""PCD figures: the fit panel puts change points, PCD and the mean where the axes map them; the surface writes the
grid; side-by-side SVG files parse."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.pcd.compute import compute_pcd
from perception_safety.report.pcd_plots import MEAN, PCD_LINE, draw_fit, fits_figure, surfaces_figure
from perception_safety.report.svg.axes import Axes, Box
from perception_safety.report.svg.canvas import Canvas

SVG = "{http://www.w3.org/2000/svg}"
BOX = Box(80.0, 40.0, 500.0, 300.0)


def result(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 100, 400))
    y = np.clip(0.9 - 0.006 * x + rng.normal(0, 1, x.size) * np.where(x < 40, 0.02, 0.15), 0, 1)
    return compute_pcd(x, y)


def _px(x):  # distance 0..100 m onto the box, computed here
    return BOX.x + np.asarray(x) / 100.0 * BOX.w


def _py(y):  # score -0.5..1.5 onto the box, y up
    return BOX.bottom - (np.asarray(y) + 0.5) / 2.0 * BOX.h


def test_fit_panel_marks_change_points_pcd_and_mean_where_the_axes_map_them(parse_svg, path_points, svg_texts):
    res = result()
    assert res.change_points.distances  # the data have a variance change at 40 m
    c = Canvas(700, 400, "t")
    draw_fit(Axes(c, BOX, (0.0, 100.0), (-0.5, 1.5)), res, "clear")
    root = parse_svg(c.svg())
    verticals = [ln for ln in root.iter(f"{SVG}line") if ln.get("x1") == ln.get("x2") and ln.get("clip-path")]
    pcd = [float(ln.get("x1")) for ln in verticals if ln.get("stroke") == PCD_LINE]
    assert pcd == [pytest.approx(_px(res.pcd), abs=0.06)]
    xs = sorted(float(ln.get("x1")) for ln in verticals if ln.get("stroke") != PCD_LINE)
    np.testing.assert_allclose(xs, sorted(_px(list(res.change_points.distances))), atol=0.06)
    (mean,) = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == MEAN]
    got = np.array(path_points(mean.get("d")))
    order = np.argsort(res.x, kind="stable")
    np.testing.assert_allclose(got[:, 0], _px(res.x[order]), atol=0.06)
    np.testing.assert_allclose(got[:, 1], _py(res.fitted[order]), atol=0.06)
    texts = svg_texts(root)
    assert "clear" in texts and "distance (m)" in texts and "IoU × confidence" in texts
    assert f"PCD = {res.pcd:.1f} m (p_t = {res.p_t:g})" in texts  # the legend names the PCD line


def test_surface_writes_every_grid_value_with_y_t_largest_on_top(tmp_path, parse_svg, svg_texts):
    res = result(1)
    root = parse_svg(surfaces_figure([("clear", res)], tmp_path / "surface.svg"))
    values = [t for t in svg_texts(root) if t.isdigit() or t == "n/a"]
    expected = [f"{v:.0f}" for v in np.asarray(res.grid)[::-1].ravel()]
    assert values[: len(expected)] == expected
    assert "PCD (m)" in svg_texts(root) and f"clear: mPCD = {res.mpcd:.1f} m" in svg_texts(root)


def test_side_by_side_svgs(tmp_path, parse_svg):
    runs = [("clear", result(2)), ("rain", result(3))]
    for fn, name in ((fits_figure, "fit.png"), (surfaces_figure, "surface.png")):
        path = fn(runs, tmp_path / name)
        assert path.suffix == ".svg" and not (tmp_path / name).exists()  # the format is the content's
        root = parse_svg(path)
        assert float(root.get("width")) >= 960  # two panels side by side
        assert "clear" in root.find(f"{SVG}desc").text and "rain" in root.find(f"{SVG}desc").text


def test_no_result_is_said_not_drawn(tmp_path, parse_svg, svg_texts):
    root = parse_svg(fits_figure([], tmp_path / "none.svg"))
    assert any(t.startswith("not computed") for t in svg_texts(root))
