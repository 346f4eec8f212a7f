"""A single self-contained HTML report: summary first, one section per analysis, config and inputs last.

Figures are inline SVG (the project's own, `report/svg`) or base64 PNG data URIs, and the style sheet is
inline, so the file opens offline anywhere.
Every number is written with its unit and, where it has one, its sample count.
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
img,svg.fig{max-width:100%;border:1px solid #d0d7de;margin:.5em 0}svg.fig{height:auto;display:block}
pre{background:#f6f8fa;padding:1em;overflow:auto;font-size:.85em}
.note{color:#57606a;font-size:.9em}.warn{color:#9a6700}
.prov{color:#57606a;font-size:.85em;font-family:ui-monospace,monospace;margin:.3em 0 1em}
table.inputs td{text-align:left;font-size:.85em}
details.sec{border-top:2px solid #d0d7de;margin-top:1.2em}details.sec>summary{font-size:1.3em;font-weight:600;
padding:.4em 0;cursor:pointer}details.sec>summary h2{display:inline;border:0;font-size:1em}
.decision{border:2px solid #d0d7de;border-radius:10px;padding:.2em 1.2em 1em;margin:1em 0}
.decision.FAIL{border-color:#cf222e}.decision.PASS{border-color:#1a7f37}.decision.INCONCLUSIVE{border-color:#9a6700}
.verdict{font-size:1.6em;font-weight:700;margin:.4em 0}
.verdict .note{font-size:.55em;font-weight:400}.verdict.FAIL{color:#cf222e}.verdict.PASS{color:#1a7f37}
.thumbs{display:flex;flex-wrap:wrap;gap:8px}.thumbs figure{margin:0;width:240px}
.thumbs img{border:1px solid #57606a;margin:0;display:block}.thumbs figcaption{font-size:.78em;color:#1b1f24}
.strip figure{width:160px}details.ev{margin:.2em 0}details.ev>summary{cursor:pointer}
table.cm td a{color:inherit}td.err{background:#ffebe9}.decision table{font-size:.82em;margin:.3em 0}
.decision td:last-child{text-align:left;color:#57606a}.decision h3{margin:.6em 0 .3em}.decision p{margin:.3em 0}
.decision ol{margin:.2em 0;font-size:.9em}.decision td:last-child{font-size:.85em;max-width:360px}
.decision p.note{font-size:.8em}
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
    """One analysis: paragraphs, tables (header + rows) and figures (SVG text or PNG bytes), in insertion order."""

    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def text(self, paragraph: str, css_class: str = "") -> Section:
        self.blocks.append(("text", (paragraph, css_class)))
        return self

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> Section:
        self.blocks.append(("table", (list(header), [list(r) for r in rows], caption)))
        return self

    def figure(self, image: bytes | str, caption: str = "") -> Section:
        """A figure: SVG markup from `report.svg` (inlined as it is) or PNG bytes (made compact, `compact_png`)."""
        self.blocks.append(("figure", (image if isinstance(image, str) else compact_png(image), caption)))
        return self

    def html(self, markup: str) -> Section:
        """Markup built by this package (every text in it already escaped): evidence strips, linked matrices."""
        self.blocks.append(("html", markup))
        return self


MAX_FIGURE_WIDTH = 820
"""Embedded figures are scaled down to this width (px): the page is at most 1100 px wide."""
PALETTE = 64
"""Colours of an embedded figure's palette (plots use few; anti-aliased edges take the rest)."""


def compact_png(png: bytes) -> bytes:
    """A PNG sized for the screen: at most `MAX_FIGURE_WIDTH` wide, `PALETTE` colours (`palette_image`)."""
    from PIL import Image

    try:
        im = Image.open(io.BytesIO(png))  # reads the header only
        if im.format == "PNG" and im.mode == "P" and im.width <= MAX_FIGURE_WIDTH:
            return png  # already compact (`figure_save`): not decoded and encoded again
        im = im.convert("RGB")
    except OSError:
        return png
    if im.width > MAX_FIGURE_WIDTH:
        im = im.resize((MAX_FIGURE_WIDTH, round(im.height * MAX_FIGURE_WIDTH / im.width)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    palette_image(im).save(buf, "PNG", optimize=True)
    return buf.getvalue() if buf.tell() < len(png) else png


def palette_image(rgb: Any) -> Any:
    """``rgb`` (a PIL image) with `PALETTE` colours by median cut: the octree quantisers are ten times cheaper but
    merge white with a colour map's palest cells (a faint tint over the page, an empty cell looking like a
    0.00 one); median cut keeps both (measured: mean error 0.4-0.8 vs 2-3 levels)."""
    from PIL import Image

    return rgb.quantize(PALETTE, method=Image.Quantize.MEDIANCUT)


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


_VERDICT_CSS = {"PASS": "good", "FAIL": "bad", "NOT EVALUATED": "na", "INCONCLUSIVE": "na"}


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
        elif kind == "html":
            out.append(payload)
        else:
            image, caption = payload
            if isinstance(image, str):  # SVG markup of this package: its <title>/<desc> name it for screen readers
                out.append(f"<figure>{image}")
            else:
                data = base64.b64encode(image).decode("ascii")
                out.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>")
            if caption:
                out.append(f"<figcaption class='note'>{html.escape(caption)}</figcaption>")
            out.append("</figure>")
    return out


_WARNING_RANK = {
    **dict.fromkeys(("bag_failed", "confusion_empty", "unmapped_ground_truth", "unmapped_detections", "error",
                     "perfect_perception_included", "rollouts_overlap", "requirement_not_evaluated", "no_results",
                     "requirement_inconclusive",
                     "pcd_failed", "chain_skipped", "returns_explained", "bbsl_image_size", "no_verdicts"), 0),
    **dict.fromkeys(("thin_columns", "pcd_zero_share", "pcd_grid_jump", "pcd_bootstrap_groups", "untracked_objects",
                     "perfect_perception_excluded", "monitored_excluded"), 2),
}
"""Which warnings reach the first screen: 0 = changes what a verdict means, 2 = a statistical note, else 1."""


@dataclass(frozen=True)
class ReportWarning:
    """One warning of the report: which analysis raised it, its stable code and the text."""

    analysis: str
    code: str
    message: str

    @property
    def text(self) -> str:
        return f"[{self.analysis}] {self.message}"


def top_warnings(items: Sequence[ReportWarning], k: int = 3) -> list[ReportWarning]:
    """The ``k`` most important warnings, one per kind (code): by rank, then in the order raised."""
    seen: set[str] = set()
    out = []
    for w in sorted(items, key=lambda w: _WARNING_RANK.get(w.code, 1)):
        if w.code not in seen:
            seen.add(w.code)
            out.append(w)
    return out[:k]


def _short(text: str, n: int = 220) -> str:
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + " …"


def warnings_html(items: Sequence[ReportWarning]) -> list[str]:
    """Warnings grouped by kind: one line per (analysis, code) with its count; the full texts behind a fold."""
    groups: dict[tuple[str, str], list[ReportWarning]] = {}
    for w in items:
        groups.setdefault((w.analysis, w.code), []).append(w)
    out = ["<ul class='warn'>"]
    for (analysis, code), ws in groups.items():
        first = html.escape(_short(ws[0].message))
        count = f" <b>({len(ws)} warnings of this kind)</b>" if len(ws) > 1 else ""
        full = len(ws) > 1 or len(ws[0].message) > 220
        line = f"[{html.escape(analysis)}] {first}{count}"
        if full:
            body = "".join(f"<li>{html.escape(w.message)}</li>" for w in ws)
            line += f"<details class='ev'><summary>all {len(ws)} in full ({html.escape(code)})</summary><ul>{body}</ul>"
            line += "</details>"
        out.append(f"<li>{line}</li>")
    out.append("</ul>")
    return out


@dataclass(frozen=True)
class Picture:
    """An embedded JPEG with the alt text that says what it shows and a caption."""

    jpeg: bytes
    alt: str
    caption: str = ""

    def html(self) -> str:
        data = base64.b64encode(self.jpeg).decode("ascii")
        cap = f"<figcaption>{html.escape(self.caption or self.alt)}</figcaption>"
        return f"<figure><img alt='{html.escape(self.alt)}' src='data:image/jpeg;base64,{data}'>{cap}</figure>"


@dataclass
class Report:
    """The report under construction; `render` gives the HTML text, `write` the file.

    Layout: the decision first (overall verdict, the requirement table of ``lead``, the three most important
    warnings, pictures of the worst failures), then every other part folded (warnings grouped by kind, summary
    cards, one fold per section, configuration and inputs).
    """

    title: str
    subtitle: str = ""
    summary: list[Metric] = field(default_factory=list)
    summary_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    warning_items: list[ReportWarning] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    lead: list[Section] = field(default_factory=list)
    """Sections shown first, in the decision box (the requirement verdicts)."""
    verdict: str = ""
    """Overall verdict (PASS, FAIL, ...; empty: no requirements, no verdict line)."""
    verdict_text: str = ""
    failures: list[Picture] = field(default_factory=list)
    """Thumbnails of the worst failures, shown in the decision box."""
    failures_note: str = ""
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

    def add_warning(self, analysis: str, message: str, code: str = "warning") -> None:
        self.warning_items.append(ReportWarning(analysis, code, message))
        self.warnings.append(f"[{analysis}] {message}")

    def _warning_list(self) -> list[ReportWarning]:
        known = {w.text for w in self.warning_items}
        return self.warning_items + [ReportWarning("", "warning", w) for w in self.warnings if w not in known]

    def _decision(self) -> list[str]:
        css = html.escape(self.verdict)
        out = [f"<section class='decision {css}' id='decision'>"]
        if self.verdict or self.verdict_text:
            out.append(f"<div class='verdict {css}'>{html.escape(self.verdict)} <span class='note'>"
                       f"{html.escape(self.verdict_text)}</span></div>")
        notes = Section("notes")
        for i, s in enumerate(self.lead):  # the lead's notes go to the end of the box: the numbers first
            out.append(f"<h3 id='lead{i}'>{html.escape(s.title)}</h3>")
            body = Section(s.title, [b for b in s.blocks if not (b[0] == "text" and b[1][1] == "note")])
            notes.blocks += [b for b in s.blocks if b[0] == "text" and b[1][1] == "note"]
            out += _blocks_html(body)
        if self.failures or self.failures_note:
            out.append("<h3>Worst failures</h3><div class='thumbs'>")
            out += [p.html() for p in self.failures]
            out.append("</div>")
            if self.failures_note:
                out.append(f"<p class='note'>{html.escape(self.failures_note)}</p>")
        top = top_warnings(self._warning_list())
        if top:
            more = len(self._warning_list()) - len(top)
            out.append("<h3>Most important warnings</h3><ol class='warn'>")
            out += [f"<li>{html.escape(_short(w.text, 300))}</li>" for w in top]
            out.append(f"</ol><p class='note'>{more} more under <a href='#warnings'>Warnings</a>.</p>" if more > 0
                       else "</ol>")
        out += _blocks_html(notes)
        out.append("</section>")
        return out

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
        if self.lead or self.verdict or self.failures:
            out += self._decision()
        warnings = self._warning_list()
        if warnings:
            kinds = len({(w.analysis, w.code) for w in warnings})
            out.append(f"<details class='sec' id='warnings'><summary><h2>Warnings ({len(warnings)})</h2> "
                       f"<span class='note'>{kinds} kind(s)</span></summary>")
            out += warnings_html(warnings)
            out.append("</details>")
        out.append("<details class='sec' id='summary'><summary><h2>Summary</h2></summary><div class='cards'>")
        for m in self.summary:
            unit = f" {html.escape(m.unit)}" if m.unit else ""
            n = f"<div class='n'>{html.escape(m.samples)}</div>" if m.samples else ""
            out.append(
                f"<div class='card {m.verdict}'><div class='l'>{html.escape(m.label)}</div>"
                f"<div class='v'>{html.escape(m.formatted())}{unit}</div>{n}</div>"
            )
        out.append("</div>")
        out += [f"<p class='note'>{html.escape(n)}</p>" for n in self.summary_notes]
        out.append("</details>")
        for i, s in enumerate(self.sections):
            out.append(f"<details class='sec' id='s{i}'><summary><h2>{html.escape(s.title)}</h2></summary>")
            out += _blocks_html(s)
            out.append("</details>")
        out.append("<details class='sec' id='inputs'><summary><h2>Configuration and inputs</h2></summary>")
        if self.input_header:
            head = "".join(f"<th>{html.escape(h)}</th>" for h in self.input_header)
            body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in self.inputs)
            out.append(f"<h3>Inputs</h3><table class='inputs'><thead><tr>{head}</tr></thead>")
            out.append(f"<tbody>{body}</tbody></table>")
        else:
            items = "".join(f"<li>{html.escape(str(p))}</li>" for p in self.inputs)
            out.append(f"<h3>Inputs</h3><ul>{items}</ul>")
        out.append(f"<h3>Configuration</h3><pre>{html.escape(self.config_text)}</pre></details>")
        out.append("</body></html>")
        return "\n".join(out)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        write_text(path, self.render())
        return path
