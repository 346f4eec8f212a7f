"""Fig. 8-style plot: the curves it draws come from the records it is given."""

from __future__ import annotations

from matplotlib.figure import Figure

from perception_safety.report.verification_plots import curves, draw_variant, plot_satisfaction

RECORDS = [
    {"variant": v, "true_env": "ped", "spec": "phi", "max_speed": V, "initial_speed": v0, "probability": 0.5 ** v0}
    for v in ("class", "prop_by_distance") for V in (1, 2) for v0 in range(V, 0, -1)
] + [{"variant": "class", "true_env": "obs", "spec": "phi", "max_speed": 1, "initial_speed": 1, "probability": 1.0}]


def test_curves_select_and_sort():
    c = curves(RECORDS, "class", "ped", "phi")
    assert c == {1: [(1, 0.5, None, None)], 2: [(1, 0.5, None, None), (2, 0.25, None, None)]}
    assert curves(RECORDS, "prop", "ped", "phi") == {}


def test_panel_lines_match_data():
    ax = Figure().subplots()
    assert draw_variant(ax, RECORDS, "prop_by_distance", "ped", "phi") == 2
    lines = ax.get_lines()
    assert [list(line.get_xdata()) for line in lines] == [[1], [1, 2]]
    assert list(lines[1].get_ydata()) == [0.5, 0.25]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["V=1", "V=2"]


def test_plot_file_written(tmp_path):
    path = plot_satisfaction(RECORDS, tmp_path / "fig.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_log_scale_drops_zeros():
    records = [*RECORDS, {"variant": "class", "true_env": "ped", "spec": "phi", "max_speed": 3, "initial_speed": 1,
                          "probability": 0.0}]
    ax = Figure().subplots()
    draw_variant(ax, records, "class", "ped", "phi", log_scale=True)
    assert ax.get_yscale() == "log"
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[0.5], [0.5, 0.25], []]


def test_band_drawn_from_lower_and_upper():
    records = [{**r, "lower": r["probability"] / 2, "upper": min(1.0, r["probability"] * 1.5)} for r in RECORDS]
    ax = Figure().subplots()
    draw_variant(ax, records, "class", "ped", "phi")
    bands = ax.collections
    assert len(bands) == 2  # one shaded band per max speed
    ys = sorted(bands[1].get_paths()[0].vertices[:, 1].tolist())
    assert min(ys) == 0.125 and max(ys) == 0.75
    plain = Figure().subplots()
    draw_variant(plain, RECORDS, "class", "ped", "phi")
    assert not plain.collections


def test_panel_without_results_says_not_computed_and_units_are_stated():
    from perception_safety.report.verification_plots import speed_label

    ax = Figure().subplots()
    assert draw_variant(ax, RECORDS, "prop", "ped", "phi") == 0
    assert not ax.axison and "not computed" in ax.texts[0].get_text()
    assert "1 cell/step = 2 m per model step" in speed_label(2.0)
    ax = Figure().subplots()
    draw_variant(ax, RECORDS, "class", "ped", "phi", cell_length_m=2.0, step_s=0.5)
    assert "1 step = 0.5 s" in ax.get_xlabel()
    assert ax.child_axes and ax.child_axes[0].get_xlabel() == "initial speed (m/s)"


def test_coinciding_lines_are_found():
    from perception_safety.report.verification_plots import coinciding

    assert coinciding(RECORDS, "class", "ped", "phi") == [1, 2]  # 0.5 ** v0 for both V
    shifted = [{**r, "probability": r["probability"] / r["max_speed"]} for r in RECORDS]
    assert coinciding(shifted, "class", "ped", "phi") == []
