"""Report figures are written once as SVG: the same text on disk and in the report, the suffix saying the format,
the write atomic."""

from __future__ import annotations

import os

import pytest

from perception_safety.report.figure_save import columns_for, save_svg
from perception_safety.report.svg.canvas import Canvas


def test_the_file_is_the_svg_with_the_svg_suffix(tmp_path, parse_svg):
    c = Canvas(120, 80, "a title", ident="x")
    c.text(10, 10, "hello")
    path = save_svg(c, tmp_path / "fig.png")
    assert path == tmp_path / "fig.svg" and not (tmp_path / "fig.png").exists()
    assert path.read_text(encoding="utf-8") == c.svg()
    assert parse_svg(path).get("width") == "120"


def test_a_link_at_the_target_is_refused_not_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    os.symlink(target, tmp_path / "fig.svg")
    with pytest.raises(Exception):  # noqa: B017 - safe_io's own error type for a non-regular target
        save_svg(Canvas(10, 10, "t"), tmp_path / "fig.svg")
    assert target.read_text() == "keep"


@pytest.mark.parametrize("n,most,cols", [(1, 3, 1), (3, 3, 3), (4, 3, 2), (5, 3, 3), (6, 3, 3), (7, 4, 4), (9, 4, 3)])
def test_small_multiples_fill_their_rows_evenly(n, most, cols):
    assert columns_for(n, most) == cols


def test_the_report_figures_never_import_matplotlib():
    import subprocess
    import sys

    code = ("import sys\n"
            "import perception_safety.report.breakdown_plots, perception_safety.report.confusion_plots\n"
            "import perception_safety.report.pcd_plots, perception_safety.report.verification_plots\n"
            "import perception_safety.report.html, perception_safety.pipeline.run\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
