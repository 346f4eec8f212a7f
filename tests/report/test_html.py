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


def test_an_svg_figure_is_inlined_with_its_caption_and_the_page_stays_well_formed(tmp_path):
    import xml.etree.ElementTree as ET

    from perception_safety.report.svg.canvas import Canvas

    figures = []
    for name in ("first", "second"):
        c = Canvas(100, 50, f"{name} <figure>", ident=name)
        c.rect(0, 0, 10, 10, "#000", clip=c.clip(0, 0, 5, 5))
        figures.append(c.svg())
    r = Report("t")
    sec = r.section("figures")
    for svg in figures:
        sec.figure(svg, "caption & note")
    text = r.render()
    inline = re.findall(r"<svg.*?</svg>", text, flags=re.S)
    assert inline == [s.strip() for s in figures]  # inlined as drawn, no data URI
    for svg in inline:
        ET.fromstring(svg)
    ids = re.findall(r'id="([^"]+)"', text)
    assert len(ids) == len(set(ids))  # two figures, no shared id
    assert text.count("caption &amp; note") == 2 and "data:image/png" not in text
