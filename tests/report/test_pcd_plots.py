"""PCD figures: fit panel marks change points and PCD; surface heatmap shows the grid; PNGs are written."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from perception_safety.evaluation.pcd.compute import compute_pcd
from perception_safety.report.pcd_plots import draw_fit, draw_surface, fits_figure, surfaces_figure


def result(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 100, 400))
    y = np.clip(0.9 - 0.006 * x + rng.normal(0, 1, x.size) * np.where(x < 40, 0.02, 0.15), 0, 1)
    return compute_pcd(x, y)


def test_fit_panel_marks_change_points_and_pcd():
    res = result()
    ax = Figure().subplots()
    draw_fit(ax, res, "clear")
    vertical = {float(line.get_xdata()[0]) for line in ax.lines if len(set(line.get_xdata())) == 1}
    assert set(res.change_points.distances) <= vertical
    assert res.pcd in vertical
    spline = [line for line in ax.lines if len(line.get_xdata()) == res.x.size]
    np.testing.assert_allclose(spline[0].get_ydata(), res.fitted)
    assert ax.get_title() == "clear"


def test_surface_heatmap_holds_the_grid():
    res = result(1)
    ax = Figure().subplots()
    im = draw_surface(ax, res)
    np.testing.assert_array_equal(im.get_array(), res.grid)
    assert len(ax.texts) == res.grid.size


def test_side_by_side_pngs(tmp_path):
    runs = [("clear", result(2)), ("rain", result(3))]
    for fn, name in ((fits_figure, "fit.png"), (surfaces_figure, "surface.png")):
        path = fn(runs, tmp_path / name)
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width = int.from_bytes(data[16:20], "big")
        assert width > 1000  # two panels side by side
