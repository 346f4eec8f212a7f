"""A single self-contained HTML report: summary first, one section per analysis, config and inputs last.

Figures are embedded as base64 PNG data URIs and the style sheet is inline, so the file opens
offline anywhere. Every number is written with its unit and, where it has one, its sample count.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perception_safety.safe_io import write_text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#1b1f24;
line-height:1.45;padding:0 1em}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #d0d7de;padding-bottom:.2em;margin-top:2em}
.sub{color:#57606a}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:1em 0}
.card{border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;min-width:190px;background:#f6f8fa}
.card .v{font-size:1.5em;font-weight:600}.card .l{color:#57606a;font-size:.9em}
.card .n{color:#57606a;font-size:.8em}
.card.bad{border-color:#cf222e;background:#ffebe9}.card.good{border-color:#1a7f37;background:#dafbe1}
.card.na{border-color:#9a6700;background:#fff8c5}td.good{background:#dafbe1;font-weight:600}
td.bad{background:#ffebe9;font-weight:600}td.na{background:#fff8c5}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:right}
th{background:#f6f8fa}td:first-child,th:first-child{text-align:left}
img{max-width:100%;border:1px solid #d0d7de;margin:.5em 0}
pre{background:#f6f8fa;padding:1em;overflow:auto;font-size:.85em}
.note{color:#57606a;font-size:.9em}.warn{color:#9a6700}
.prov{color:#57606a;font-size:.85em;font-family:ui-monospace,monospace;margin:.3em 0 1em}
table.inputs td{text-align:left;font-size:.85em}
"""


@dataclass(frozen=True)
class Metric:
    """One headline number: label, value, unit and the sample count behind it."""

    label: str
    value: float | str
    unit: str = ""
    samples: str = ""
    verdict: str = ""  # "good", "bad", "na" (a requirement on it was not evaluated) or ""

    def formatted(self) -> str:
        if isinstance(self.value, float):
            return f"{self.value:.4g}"
        return str(self.value)


@dataclass
class Section:
    """One analysis: paragraphs, tables (header + rows) and PNG figures, in insertion order."""

    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def text(self, paragraph: str, css_class: str = "") -> Section:
        self.blocks.append(("text", (paragraph, css_class)))
        return self

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> Section:
        self.blocks.append(("table", (list(header), [list(r) for r in rows], caption)))
        return self

    def figure(self, png: bytes, caption: str = "") -> Section:
        self.blocks.append(("figure", (png, caption)))
        return self


def figure_png(fig: Any, dpi: int = 110) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return html.escape(f"{value:.4g}")
    return html.escape(str(value))


_VERDICT_CSS = {"PASS": "good", "FAIL": "bad", "NOT EVALUATED": "na"}


def _blocks_html(s: Section) -> list[str]:
    """A section's paragraphs, tables and figures (a table cell reading PASS/FAIL/NOT EVALUATED is coloured)."""
    out = []
    for kind, payload in s.blocks:
        if kind == "text":
            text, css = payload
            out.append(f"<p class='{css}'>{html.escape(text)}</p>")
        elif kind == "table":
            header, rows, caption = payload
            cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
            head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)

            def td(c: Any) -> str:
                css = _VERDICT_CSS.get(c) if isinstance(c, str) else None
                return f"<td class='{css}'>{_cell(c)}</td>" if css else f"<td>{_cell(c)}</td>"

            body = "".join("<tr>" + "".join(td(c) for c in r) + "</tr>" for r in rows)
            out.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            png, caption = payload
            data = base64.b64encode(png).decode("ascii")
            out.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>")
            if caption:
                out.append(f"<figcaption class='note'>{html.escape(caption)}</figcaption>")
            out.append("</figure>")
    return out


@dataclass
class Report:
    """The report under construction; `render` gives the HTML text, `write` the file."""

    title: str
    subtitle: str = ""
    summary: list[Metric] = field(default_factory=list)
    summary_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    lead: list[Section] = field(default_factory=list)
    """Sections shown first, before warnings and summary (the requirement verdicts)."""
    config_text: str = ""
    inputs: list[Any] = field(default_factory=list)
    """One entry per input: a path, or a row of ``input_header`` columns (path, role, hash, ...)."""
    input_header: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    """Provenance lines under the title (version, commit, date, config hash)."""

    def section(self, title: str) -> Section:
        s = Section(title)
        self.sections.append(s)
        return s

    def render(self) -> str:
        out = [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{html.escape(self.title)}</h1>",
        ]
        if self.subtitle:
            out.append(f"<p class='sub'>{html.escape(self.subtitle)}</p>")
        if self.header:
            out.append("<div class='prov'>" + "<br>".join(html.escape(h) for h in self.header) + "</div>")
        for i, s in enumerate(self.lead):
            out.append(f"<h2 id='lead{i}'>{html.escape(s.title)}</h2>")
            out += _blocks_html(s)
        if self.warnings:
            out.append(f"<h2 id='warnings'>Warnings ({len(self.warnings)})</h2><ul class='warn'>")
            out += [f"<li>{html.escape(w)}</li>" for w in self.warnings]
            out.append("</ul>")
        out.append("<h2 id='summary'>Summary</h2><div class='cards'>")
        for m in self.summary:
            unit = f" {html.escape(m.unit)}" if m.unit else ""
            n = f"<div class='n'>{html.escape(m.samples)}</div>" if m.samples else ""
            out.append(
                f"<div class='card {m.verdict}'><div class='l'>{html.escape(m.label)}</div>"
                f"<div class='v'>{html.escape(m.formatted())}{unit}</div>{n}</div>"
            )
        out.append("</div>")
        out += [f"<p class='note'>{html.escape(n)}</p>" for n in self.summary_notes]
        if self.sections:
            out.append(
                "<p>Sections: "
                + " · ".join(f"<a href='#s{i}'>{html.escape(s.title)}</a>" for i, s in enumerate(self.sections))
                + "</p>"
            )
        for i, s in enumerate(self.sections):
            out.append(f"<h2 id='s{i}'>{html.escape(s.title)}</h2>")
            out += _blocks_html(s)
        out.append("<h2 id='inputs'>Configuration and inputs</h2>")
        if self.input_header:
            head = "".join(f"<th>{html.escape(h)}</th>" for h in self.input_header)
            body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in self.inputs)
            out.append(f"<h3>Inputs</h3><table class='inputs'><thead><tr>{head}</tr></thead>")
            out.append(f"<tbody>{body}</tbody></table>")
        else:
            items = "".join(f"<li>{html.escape(str(p))}</li>" for p in self.inputs)
            out.append(f"<h3>Inputs</h3><ul>{items}</ul>")
        out.append(f"<h3>Configuration</h3><pre>{html.escape(self.config_text)}</pre>")
        out.append("</body></html>")
        return "\n".join(out)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        write_text(path, self.render())
        return path
