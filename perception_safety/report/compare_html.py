"""The ``compare`` report: two runs side by side (summary, requirements, every shared metric), one HTML file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perception_safety.report.html import Metric, Report, Section

_MARK = {"better": "better ▲", "worse": "worse ▼", "same": "same", "changed": "changed"}


def _with_interval(v: float, iv: Any, n: Any) -> str:
    text = f"{v:.4g}"
    if iv:
        text += f" [{iv[0]:.4g}, {iv[1]:.4g}]"
    if n is not None:
        text += f" (n = {n})"
    return text


def _prov_line(label: str, run: Mapping[str, Any]) -> str:
    p = run.get("provenance") or {}
    commit = (p.get("git_commit") or "no commit")[:12]
    return (
        f"{label}: {run.get('path')} · {p.get('package', 'perception_safety')} {p.get('version', '?')} · {commit} · "
        f"{p.get('date_utc', 'no date')} · config sha256 {str(p.get('config_sha256', '?'))[:16]}"
    )


def _test_text(r: Mapping[str, Any]) -> str:
    text = r.get("test") or ""
    if r.get("diff_interval"):
        lo, hi = r["diff_interval"]
        text += f"; B − A in [{lo:+.4g}, {hi:+.4g}]"
    if r.get("p_value") is not None:
        text += f"; p = {r['p_value']:.3g}"
    return text


def _regressions(doc: Mapping[str, Any], label_a: str, label_b: str) -> Section:
    """The first screen: the verdict of the comparison, what regressed, and whether the runs are comparable."""
    s = doc["summary"]
    sec = Section("Regressions")
    pairing = doc.get("pairing", "independent")
    sec.text(
        f"{label_b} vs {label_a}: {s['significantly_worse']} metric(s) significantly worse, "
        f"{len(s['requirements_regressed'])} requirement(s) regressed. The runs are {pairing}"
        + (" (same inputs: recall/precision tested paired)." if pairing == "paired" else "."),
        "warn" if s["significantly_worse"] or s["requirements_regressed"] else "",
    )
    reg = [q for q in doc.get("requirements", []) if q["regressed"]]
    worse = [r for r in doc["rows"] if r["change"] == "worse" and r["significant"]]
    if reg or worse:
        sec.table(
            ["what", label_a, label_b, f"{label_b} − {label_a}", "test"],
            [[f"requirement {q['label']}", q["a"], q["b"], "", "verdict"] for q in reg]
            + [[r["key"], f"{r['a']:.4g}", f"{r['b']:.4g}", f"{r['diff']:+.4g}", _test_text(r)] for r in worse],
        )
    else:
        sec.text("Nothing regressed significantly.", "note")
    return sec


def compare_report(doc: Mapping[str, Any], label_a: str = "A", label_b: str = "B") -> Report:
    """A `Report` of the comparison document of `pipeline.compare.compare`."""
    s = doc["summary"]
    rep = Report(f"perception_safety comparison: {label_a} vs {label_b}", f"{s['shared']} shared metrics")
    runs = doc.get("runs", {})
    rep.header = [_prov_line(label_a, runs.get("a", {})), _prov_line(label_b, runs.get("b", {}))]
    code = doc.get("exit_code")
    rep.summary = [
        Metric(
            f"{label_b} significantly worse",
            s["significantly_worse"],
            "",
            "metrics (test per row)",
            "bad" if s["significantly_worse"] else "good",
        ),
        Metric(f"{label_b} significantly better", s["significantly_better"], "", "metrics (test per row)"),
        Metric(f"{label_b} worse / better (any size)", f"{s['worse']} / {s['better']}", "", f"of {s['shared']}"),
        Metric(
            "requirements regressed",
            len(s["requirements_regressed"]),
            "",
            ", ".join(s["requirements_regressed"]) or "none",
            "bad" if s["requirements_regressed"] else "good",
        ),
    ]
    if code is not None:
        rep.summary_notes.append(f"Exit code {code} (--fail-on {doc.get('fail_on')}).")
    for key, text in doc["definitions"].items():
        rep.summary_notes.append(f"{key}: {text}")
    for w in doc.get("warnings", []):
        rep.add_warning("compare", w["message"], f"differs_{w['kind']}")
    rep.lead.append(_regressions(doc, label_a, label_b))
    reqs = doc.get("requirements", [])
    sec = rep.section("Requirements side by side")
    if reqs:
        sec.table(
            ["requirement", label_a, label_b, f"value {label_a}", f"value {label_b}", "regressed"],
            [
                [
                    q["label"],
                    q["a"] or "-",
                    q["b"] or "-",
                    q["a_value"] if q["a_value"] is not None else "-",
                    q["b_value"] if q["b_value"] is not None else "-",
                    "YES" if q["regressed"] else "",
                ]
                for q in reqs
            ],
        )
    else:
        sec.text("Not computed: neither run has a requirements table (no 'requirements' in their config).", "note")
    titles = {
        "confusion": "Recall and precision (by distance bin and pooled)",
        "pcd": "PCD and mPCD",
        "verification": "System-level verification: P(φ)",
        "bbsl": "BBSL pass rates",
        "returns": "Safety Gain / Residual Hazard / Availability Cost",
    }
    for group, title in titles.items():
        rows = [r for r in doc["rows"] if r["group"] == group]
        if not rows:
            continue
        sec = rep.section(title)
        rows.sort(key=lambda r: (not (r["change"] == "worse" and r["significant"]), r["key"]))
        sec.table(
            [
                "metric",
                f"{label_a} [interval]",
                f"{label_b} [interval]",
                f"{label_b} − {label_a}",
                "significant",
                "test",
                f"{label_b} is",
            ],
            [
                [
                    r["key"],
                    _with_interval(r["a"], r["a_interval"], r["a_n"]),
                    _with_interval(r["b"], r["b_interval"], r["b_n"]),
                    f"{r['diff']:+.4g}",
                    {True: "yes", False: "no", None: "no interval"}[r["significant"]],
                    _test_text(r),
                    _MARK[r["change"]],
                ]
                for r in rows
            ],
            "Significantly worse rows first.",
        )
    if doc.get("only_in_a") or doc.get("only_in_b"):
        sec = rep.section("Metrics in only one run")
        sec.table(
            ["metric", "only in"], [[k, label_a] for k in doc["only_in_a"]] + [[k, label_b] for k in doc["only_in_b"]]
        )
    return rep
