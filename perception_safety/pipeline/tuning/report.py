"""The tuning outputs: ``tuning.json`` (one row per operating point), the trade-off curves (SG vs AC and RH vs AC,
E1 and the Markov-chain figures, with their simultaneous intervals, the Pareto front ringed and the chosen point
starred), a one-page ``tuning.html`` and ``monitors.tuned.yaml`` for the node."""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.tuning.select import figure
from perception_safety.safe_io.atomic_write import write_bytes, write_text


def _axis(ax: Any, rows: Sequence[dict[str, Any]], x: str, y: str, front: Sequence[int], chosen: int | None) -> bool:
    pts = [(i, figure(r, x), figure(r, y)) for i, r in enumerate(rows)]
    pts = [(i, fx, fy) for i, fx, fy in pts if fx is not None and fy is not None]
    if not pts:
        ax.text(0.5, 0.5, f"{y} vs {x}: not computed", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return False
    for i, fx, fy in pts:
        xe = [[fx["value"] - (fx.get("lower") if fx.get("lower") is not None else fx["value"])],
              [(fx.get("upper") if fx.get("upper") is not None else fx["value"]) - fx["value"]]]
        ye = [[fy["value"] - (fy.get("lower") if fy.get("lower") is not None else fy["value"])],
              [(fy.get("upper") if fy.get("upper") is not None else fy["value"]) - fy["value"]]]
        ax.errorbar(fx["value"], fy["value"], xerr=xe, yerr=ye, fmt="o", color="#1f77b4", ms=4, lw=0.8,
                    capsize=2, alpha=0.8)
        ax.annotate(rows[i]["label"].split("=")[-1], (fx["value"], fy["value"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    line = sorted((fx["value"], fy["value"]) for _, fx, fy in pts)
    ax.plot([p[0] for p in line], [p[1] for p in line], color="#1f77b4", lw=0.5, alpha=0.5)
    f = [(fx["value"], fy["value"]) for i, fx, fy in pts if i in front]
    if f:
        ax.scatter([p[0] for p in f], [p[1] for p in f], s=90, facecolors="none", edgecolors="#2ca02c", lw=1.5,
                   label="Pareto front (SG up, AC down)")
    c = [(fx["value"], fy["value"]) for i, fx, fy in pts if i == chosen]
    if c:
        ax.scatter([c[0][0]], [c[0][1]], marker="*", s=220, color="#d62728", zorder=5, label="chosen")
    ax.set_xlabel(f"{x} (availability cost)")
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return True


def tradeoff_figure(rows: Sequence[dict[str, Any]], front: Sequence[int], chosen: int | None, level: float) -> bytes:
    """PNG of the four trade-off panels (E1 and system, SG and RH against AC)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), dpi=90)
    _axis(axes[0][0], rows, "AC", "SG", front, chosen)
    _axis(axes[0][1], rows, "AC", "RH", front, chosen)
    _axis(axes[1][0], rows, "AC_sys", "SG_sys", front, chosen)
    _axis(axes[1][1], rows, "AC_sys", "RH_sys", front, chosen)
    axes[0][0].set_title("E1 (recorded frames, episodes as clusters)", fontsize=9)
    axes[1][0].set_title("Markov chain with the monitor (verdict-split counts)", fontsize=9)
    fig.suptitle(f"Monitor operating points: bars are simultaneous {100 * level:g} % intervals over all points",
                 fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _fmt(fig: dict[str, Any] | None) -> str:
    if fig is None:
        return "-"
    lo, hi = fig.get("lower"), fig.get("upper")
    iv = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
    return f"{fig['value']:.3g}{iv}"


def tuning_html(doc: dict[str, Any], png: bytes) -> str:
    """The report page: the decision first, then the curves and the table of every point."""
    sel = doc["selection"]
    rows = doc["rows"]
    if sel.get("chosen") is not None:
        head = (f"<p class='ok'><b>Chosen:</b> {html.escape(rows[sel['chosen']]['label'])} — meets "
                f"{html.escape(', '.join(sel['requirements']) or 'no requirement')} by its bounds, best "
                f"{html.escape(sel['objective_bound'])} ({sel['objective_value']:.3g}).</p>")
    elif sel.get("nearest") is not None:
        head = (f"<p class='bad'><b>No operating point meets</b> {html.escape(', '.join(sel['requirements']))}: the "
                f"nearest, {html.escape(rows[sel['nearest']]['label'])}, misses by {sel['nearest_miss']:.3g}.</p>")
    else:
        head = "<p class='bad'><b>No operating point was computed.</b></p>"
    cols = ["point", "alarm rate", "SG", "RH", "AC", "SG_sys", "RH_sys", "AC_sys", "Pareto"]
    body = "".join(
        "<tr" + (" class='chosen'" if i == sel.get("chosen") else "") + "><td>" + html.escape(r["label"]) + "</td>"
        + f"<td>{r['e1']['alarm_rate']:.3f}</td>"
        + "".join(f"<td>{_fmt(figure(r, k))}</td>" for k in ("SG", "RH", "AC", "SG_sys", "RH_sys", "AC_sys"))
        + f"<td>{'yes' if i in doc['pareto_front'] else ''}</td></tr>"
        for i, r in enumerate(rows)
    )
    img = base64.b64encode(png).decode("ascii")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in doc["notes"])
    warns = "".join(f"<p class='bad'>Warning: {html.escape(w)}</p>" for w in doc.get("warnings", []))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Monitor operating points</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}
td:first-child{{text-align:left}}.ok{{background:#e8f5e9;padding:.6em}}.bad{{background:#fdecea;padding:.6em}}
tr.chosen{{background:#fff3cd}}</style></head><body>
<h1>Is the monitor worth it, and at which threshold?</h1>{head}{warns}
<p>{len(rows)} operating points of {html.escape(', '.join(doc['params']))}; {doc['frames']} frames in
{doc['episodes']} episodes (the independent unit). Every interval holds simultaneously over all points at
{100 * doc['level']:g} % (each at alpha = {doc['alpha_per_interval']:.3g}).</p>
<img src="data:image/png;base64,{img}" alt="Trade-off curves: SG and RH against AC for E1 and for the Markov chain
with the monitor, one point per operating point with simultaneous intervals, the Pareto front ringed, the chosen
point starred" style="max-width:100%">
<table><tr>{''.join(f'<th>{c}</th>' for c in cols)}</tr>{body}</table>
<h2>What the figures assume</h2><ul>{notes}</ul></body></html>
"""


def write_outputs(out: Path, doc: dict[str, Any], png: bytes, tuned: MonitorsConfig | None) -> list[Path]:
    """``tuning.json``, ``tradeoff.png``, ``tuning.html`` and, when a point was chosen, ``monitors.tuned.yaml``."""
    paths = [write_text(out / "tuning.json", json.dumps(doc, indent=1) + "\n"),
             write_bytes(out / "tradeoff.png", png),
             write_text(out / "tuning.html", tuning_html(doc, png))]
    if tuned is not None:
        chosen = doc["rows"][doc["selection"]["chosen"]]["label"]
        text = (f"# Chosen by perception-safety tune-monitor: {chosen}\n# requirements: "
                f"{', '.join(doc['selection']['requirements']) or 'none'}; objective: {doc['selection']['objective']}\n"
                + yaml.safe_dump({"monitors": tuned.model_dump(mode="json")}, sort_keys=False))
        paths.append(write_text(out / "monitors.tuned.yaml", text))
    return paths
