"""Heatmaps of confusion matrices: colours are P(pred | true), cells carry the counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.image import imread

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.report.confusion_plots import draw_matrix, plot_all, plot_bin


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


def test_heatmap_values_are_column_normalised_and_texts_are_counts() -> None:
    cm = np.array([[3, 0, 0], [1, 2, 0], [0, 2, 5]])
    ax = Figure().add_subplot()
    im = draw_matrix(ax, cm, ("ped", "obs", "empty"), "t")
    shown = np.asarray(im.get_array())
    assert shown[0, 0] == 0.75 and shown[1, 0] == 0.25 and shown[2, 1] == 0.5 and shown[2, 2] == 1.0
    texts = [t.get_text() for t in ax.texts]
    assert texts[0] == "3\n0.75" and texts[7] == "2\n0.50"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ped", "obs", "empty"]


def test_empty_column_is_drawn_as_zero_not_nan() -> None:
    ax = Figure().add_subplot()
    im = draw_matrix(ax, np.zeros((2, 2)), ("ped", "empty"), "t")
    assert not np.isnan(np.asarray(im.get_array())).any()


def test_plot_all_writes_one_png_per_bin_pooled_and_grid(tmp_path: Path) -> None:
    paths = plot_all(small(), tmp_path, dpi=40)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        [f"{k}_cm_bin{b:02d}.png" for k in ("class", "prop") for b in range(2)]
        + [f"{k}_cm_{s}.png" for k in ("class", "prop") for s in ("pooled", "grid")]
    )
    img = imread(tmp_path / "class_cm_bin00.png")
    assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50


def test_pooled_panel_uses_pooled_counts(tmp_path: Path) -> None:
    a = imread(plot_bin(small(), "class", None, tmp_path / "pooled.png", dpi=40))
    b = imread(plot_bin(small(), "class", 0, tmp_path / "bin0.png", dpi=40))
    assert a.shape == b.shape and not np.array_equal(a, b)  # titles and the (empty, empty) count differ


def test_undefined_column_says_n_a() -> None:
    ax = Figure().add_subplot()
    draw_matrix(ax, np.array([[0, 1], [0, 3]]), ("ped", "empty"), "t")
    assert [t.get_text() for t in ax.texts] == ["0\nn/a", "1\n0.25", "0\nn/a", "3\n0.75"]


def test_pages_draw_only_bins_with_objects_and_the_pooled_matrix(tmp_path: Path) -> None:
    from perception_safety.report.confusion_plots import bins_with_objects, plot_pages

    dc = small()  # bin 1 holds only an empty frame
    assert bins_with_objects(dc, "class") == [0]
    pages, skipped = plot_pages(dc, "class", tmp_path, per_page=4, dpi=40)
    assert [p.name for p in pages] == ["class_cm_page1.png"] and skipped == [1]
    many, _ = plot_pages(dc, "class", tmp_path / "one_per_page", per_page=1, dpi=40)
    assert len(many) == 2  # bin 0, then pooled
    assert imread(many[0]).shape[1] >= 2.5 * 40  # a panel of about 1 inch per label
