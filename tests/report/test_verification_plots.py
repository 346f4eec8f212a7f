"""Fig. 8-style plot: the curves it draws come from the records it is given, at the pixels the axes map them to."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.report.svg.axes import Axes, Box
from perception_safety.report.svg.canvas import Canvas
from perception_safety.report.verification_plots import curves, draw_variant, plot_satisfaction

SVG = "{http://www.w3.org/2000/svg}"
BOX = Box(70.0, 60.0, 400.0, 200.0)
RECORDS = [
    {"variant": v, "true_env": "ped", "spec": "phi", "max_speed": V, "initial_speed": v0, "probability": 0.5 ** v0}
    for v in ("class", "prop_by_distance") for V in (1, 2) for v0 in range(V, 0, -1)
] + [{"variant": "class", "true_env": "obs", "spec": "phi", "max_speed": 1, "initial_speed": 1, "probability": 1.0}]


def _panel(records, variant="prop_by_distance", ylim=(0.0, 1.0), ylog=False, **kw):
    c = Canvas(600, 400, "t")
    n = draw_variant(Axes(c, BOX, (0.0, 4.0), ylim, ylog=ylog), curves(records, variant, "ped", "phi"), "phi", **kw)
    return c, n


def _lines(root):
    return [p for p in root.iter(f"{SVG}path")
            if p.get("fill") == "none" and p.get("clip-path") and not p.get("stroke-linecap")]  # not the dots


def test_curves_select_and_sort():
    c = curves(RECORDS, "class", "ped", "phi")
    assert c == {1: [(1, 0.5, None, None)], 2: [(1, 0.5, None, None), (2, 0.25, None, None)]}
    assert curves(RECORDS, "prop", "ped", "phi") == {}


def test_panel_lines_match_data(parse_svg, path_points, svg_texts):
    c, n = _panel(RECORDS)
    assert n == 2
    root = parse_svg(c.svg())
    pts = [path_points(p.get("d")) for p in _lines(root)]
    x = lambda v: BOX.x + v / 4.0 * BOX.w  # noqa: E731 - the pixel maps, computed here
    y = lambda p: BOX.bottom - p * BOX.h  # noqa: E731
    assert pts[0] == [pytest.approx((x(1), y(0.5)), abs=0.06)]
    assert pts[1] == [pytest.approx((x(1), y(0.5)), abs=0.06), pytest.approx((x(2), y(0.25)), abs=0.06)]
    texts = svg_texts(root)
    assert "V=1" in texts and "V=2" in texts and "max speed" in texts and "P(s0 ⊨ phi)" in texts


def test_plot_file_written_as_svg(tmp_path, parse_svg, svg_texts):
    path = plot_satisfaction(RECORDS, tmp_path / "fig.png")
    assert path.name == "fig.svg"
    texts = svg_texts(parse_svg(path))
    assert "(a) class-labeled" in texts and "(d) proposition-labeled, by distance" in texts
    assert any(t.startswith("not computed: no result for variant 'class_by_distance'") for t in texts)


def test_log_scale_drops_zeros(parse_svg, path_points):
    records = [*RECORDS, {"variant": "class", "true_env": "ped", "spec": "phi", "max_speed": 3, "initial_speed": 1,
                          "probability": 0.0}]
    c, _ = _panel(records, "class", (1e-2, 1.0), ylog=True)
    lines = [path_points(p.get("d")) for p in _lines(parse_svg(c.svg()))]
    assert [len(p) for p in lines] == [1, 2]  # V=3's only point is 0: no line
    assert lines[1][1][1] == pytest.approx(BOX.bottom - (np.log10(0.25) + 2) / 2 * BOX.h, abs=0.06)


def test_band_drawn_from_lower_and_upper(parse_svg, path_points):
    records = [{**r, "lower": r["probability"] / 2, "upper": min(1.0, r["probability"] * 1.5)} for r in RECORDS]
    c, _ = _panel(records, "class")
    bands = [p for p in parse_svg(c.svg()).iter(f"{SVG}path") if p.get("fill-opacity")]
    assert len(bands) == 1  # V=1 has a single point: no area; V=2 has its band
    ys = sorted(p[1] for p in path_points(bands[0].get("d")))
    assert ys[0] == pytest.approx(BOX.bottom - 0.75 * BOX.h, abs=0.06)
    assert ys[-1] == pytest.approx(BOX.bottom - 0.125 * BOX.h, abs=0.06)
    plain, _ = _panel(RECORDS, "class")
    assert not [p for p in parse_svg(plain.svg()).iter(f"{SVG}path") if p.get("fill-opacity")]


def test_units_are_stated_and_the_m_per_s_axis_is_drawn(parse_svg, svg_texts):
    from perception_safety.report.verification_plots import speed_label

    assert "1 cell/step = 2 m per model step" in speed_label(2.0)
    c, _ = _panel(RECORDS, "class", cell_length_m=2.0, step_s=0.5)
    root = parse_svg(c.svg())
    texts = svg_texts(root)
    assert any("1 step = 0.5 s" in t for t in texts) and "initial speed (m/s)" in texts
    above = {float(t.text): float(t.get("x")) for t in root.iter(f"{SVG}text") if float(t.get("y")) < BOX.y
             and t.text and t.text.replace(".", "").isdigit()}
    assert max(above) <= 16.0 and len(above) >= 3  # 0..4 cells/step at 2 m per 0.5 s: 0..16 m/s
    for ms, px in above.items():  # v m/s is v / 4 cells/step
        assert px == pytest.approx(BOX.x + ms / 4.0 / 4.0 * BOX.w, abs=0.06)


def test_coinciding_lines_are_found():
    from perception_safety.report.verification_plots import coinciding

    assert coinciding(RECORDS, "class", "ped", "phi") == [1, 2]  # 0.5 ** v0 for both V
    shifted = [{**r, "probability": r["probability"] / r["max_speed"]} for r in RECORDS]
    assert coinciding(shifted, "class", "ped", "phi") == []


def test_panels_share_their_axes_also_on_a_log_scale(tmp_path, parse_svg):
    records = [{**r, "probability": r["probability"] * (1e-6 if r["variant"] == "class" else 1.0)} for r in RECORDS]
    root = parse_svg(plot_satisfaction(records, tmp_path / "log.svg", variants=("class", "prop_by_distance"),
                                       log_scale=True))
    labels = {t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("1e")}
    assert {"1e-7", "1e0"} <= labels  # one range for both panels: the left column's labels read for the right one
