"""The HTML report is self-contained: inline style, embedded PNGs, escaped text, no network references."""

from __future__ import annotations

import base64
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from perception_safety.report.html import Metric, Report, figure_png


def build_report() -> Report:
    r = Report("Evaluation <test>", subtitle="2 bags")
    r.summary.append(Metric("mPCD", 41.5, "m", "n = 600 samples", "good"))
    r.summary.append(Metric("P(stop at k)", 0.25, "", "V = 3"))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    r.section("PCD").text("A <b>paragraph</b>").table(["y_t", "PCD (m)"], [[0.5, 40.25]]).figure(
        figure_png(fig), "spline"
    )
    r.config_text = "pcd:\n  method: paper"
    r.inputs = ["/data/a.bag"]
    return r


def test_report_embeds_everything_and_escapes_text(tmp_path):
    path = build_report().write(tmp_path / "report.html")
    text = path.read_text()
    assert not re.search(r"(src|href)=['\"]https?://", text)
    (data,) = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert base64.b64decode(data).startswith(b"\x89PNG")
    assert "&lt;b&gt;paragraph&lt;/b&gt;" in text and "<b>paragraph" not in text
    assert "Evaluation &lt;test&gt;" in text
    assert text.index("Summary") < text.index("id='s0'") < text.index("Configuration and inputs")
    assert "41.5 m" in text and "n = 600 samples" in text and "/data/a.bag" in text and "method: paper" in text
