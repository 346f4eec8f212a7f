"""Heatmaps of confusion matrices: colours are P(pred | true), cells carry the counts; SVG files per bin and page."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perception_safety.evaluation.confusion.metrics import class_metrics
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.report.confusion_plots import matrix_texts, plot_all, plot_bin, plot_rates
from perception_safety.report.svg.heatmap import BLUES, MISSING

SVG = "{http://www.w3.org/2000/svg}"


def small() -> DistanceConfusion:
    return DistanceConfusion(
        bin_edges=((0, 10), (10, 20)),
        class_labels=("ped", "obs", "empty"),
        prop_labels=("ped", "obs", "ped,obs", "empty"),
        class_cm=[[[3, 0, 0], [1, 2, 0], [0, 2, 5]], [[0, 0, 0], [0, 0, 0], [0, 0, 1]]],
        prop_cm=np.zeros((2, 4, 4), dtype=int),
        class_cm_pooled=[[3, 0, 0], [1, 2, 0], [0, 2, 6]],
        prop_cm_pooled=np.zeros((4, 4), dtype=int),
    )


def test_heatmap_values_are_column_normalised_and_texts_are_counts():
    shown, texts = matrix_texts(np.array([[3, 0, 0], [1, 2, 0], [0, 2, 5]]))
    assert shown[0, 0] == 0.75 and shown[1, 0] == 0.25 and shown[2, 1] == 0.5 and shown[2, 2] == 1.0
    assert texts[0][0] == "3\n0.75" and texts[2][1] == "2\n0.50"


def test_undefined_column_says_n_a_and_is_grey(tmp_path: Path, parse_svg, svg_texts):
    shown, texts = matrix_texts(np.array([[0, 1], [0, 3]]))
    assert [t for row in texts for t in row] == ["0\nn/a", "1\n0.25", "0\nn/a", "3\n0.75"]
    assert np.isnan(shown[:, 0]).all()
    root = parse_svg(plot_bin(small(), "class", 1, tmp_path / "bin1.svg"))  # only the empty column has a count
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect")]
    assert fills.count(MISSING) == 6 and svg_texts(root).count("0\nn/a") == 6


def test_cell_fills_are_the_colour_map_at_p(tmp_path: Path, parse_svg, svg_texts):
    root = parse_svg(plot_bin(small(), "class", 0, tmp_path / "bin0.svg"))
    texts = [t for t in svg_texts(root) if "\n" in t]
    assert texts == ["3\n0.75", "0\n0.00", "0\n0.00", "1\n0.25", "2\n0.50", "0\n0.00", "0\n0.00", "2\n0.50",
                     "5\n1.00"]
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("fill", "").startswith("#")][1:10]
    assert fills == BLUES.hex([0.75, 0, 0, 0.25, 0.5, 0, 0, 0.5, 1.0])
    assert {"ped", "obs", "empty", "true", "predicted", "P(pred | true)", "class-labeled, [0, 10) m"} <= set(
        svg_texts(root))


def test_plot_all_writes_one_svg_per_bin_pooled_and_grid(tmp_path: Path, parse_svg):
    paths = plot_all(small(), tmp_path)
    assert sorted(p.name for p in paths) == sorted(
        [f"{k}_cm_bin{b:02d}.svg" for k in ("class", "prop") for b in range(2)]
        + [f"{k}_cm_{s}.svg" for k in ("class", "prop") for s in ("pooled", "grid")]
    )
    for p in paths:
        parse_svg(p)
    pooled = parse_svg(tmp_path / "class_cm_pooled.svg")
    assert "6\n1.00" in ["\n".join(s.text for s in t.findall(f"{SVG}tspan")) for t in pooled.iter(f"{SVG}text")]


def test_pages_draw_only_bins_with_objects_and_the_pooled_matrix(tmp_path: Path, svg_texts, parse_svg):
    from perception_safety.report.confusion_plots import bins_with_objects, plot_pages

    dc = small()  # bin 1 holds only an empty frame
    assert bins_with_objects(dc, "class") == [0]
    pages, skipped = plot_pages(dc, "class", tmp_path, per_page=4)
    assert [p.name for p in pages] == ["class_cm_page1.svg"] and skipped == [1]
    titles = [t for t in svg_texts(parse_svg(pages[0])) if t.startswith("class-labeled")]
    assert titles == ["class-labeled, [0, 10) m", "class-labeled, pooled [0, 20) m"]
    many, _ = plot_pages(dc, "class", tmp_path / "one_per_page", per_page=1)
    assert len(many) == 2  # bin 0, then pooled


def test_rates_figure_names_undefined_rates(tmp_path: Path, parse_svg, svg_texts):
    dc = small()
    root = parse_svg(plot_rates(class_metrics(dc, 0.05, 5), tmp_path / "rates.svg"))
    texts = svg_texts(root)
    assert "recall per bin, 95 % Clopper-Pearson" in texts and "distance (m, bin centre)" in texts
    empty = DistanceConfusion(bin_edges=((0, 10),), class_labels=("ped", "empty"), prop_labels=("ped", "empty"),
                              class_cm=np.zeros((1, 2, 2), dtype=int), prop_cm=np.zeros((1, 2, 2), dtype=int),
                              class_cm_pooled=np.zeros((2, 2), dtype=int), prop_cm_pooled=np.zeros((2, 2), dtype=int))
    root = parse_svg(plot_rates(class_metrics(empty, 0.05, 5), tmp_path / "none.svg"))
    assert any(t.startswith("not computed: no recall") for t in svg_texts(root))
