"""Detector A vs B: every metric two ``evaluate`` runs share, its difference, and whether it is significant.

A metric is significant when both runs give it an interval and the two intervals do not overlap (a
conservative test: non-overlap of two 95 % intervals implies a difference at a smaller level). Rates without a
stored interval but with counts get their Clopper-Pearson interval here. Requirement verdicts are set side by side.
The verdict of a comparison (`worse`) drives the exit code of ``perception-safety compare``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.pipeline.run_state import load_complete_results

COMPARE_FORMAT = "perception_safety.compare/1"


class CompareError(PerceptionSafetyError):
    """A run folder cannot be compared (no results.json, unreadable, another format)."""


@dataclass(frozen=True)
class Value:
    """One metric of one run: value, interval (if any), sample count, and which direction is better."""

    key: str
    group: str
    value: float
    lower: float | None = None
    upper: float | None = None
    n: int | None = None
    higher_is_better: bool | None = True


@dataclass(frozen=True)
class Row:
    """One shared metric: A, B, B - A, significance and the direction of the change for B."""

    key: str
    group: str
    a: float
    b: float
    diff: float
    a_interval: tuple[float, float] | None
    b_interval: tuple[float, float] | None
    a_n: int | None
    b_n: int | None
    significant: bool | None
    """True/False when both intervals exist, None when the difference cannot be tested."""
    change: str
    """'better', 'worse' or 'same' for B relative to A ('changed' when no direction is defined)."""
    test: str = ""
    """How ``significant`` was decided (disjoint intervals, paired bootstrap over episodes, McNemar)."""
    diff_interval: tuple[float, float] | None = None
    """Interval of B - A (paired bootstrap), when the test gives one."""
    p_value: float | None = None


def load_results(run: str | Path) -> dict[str, Any]:
    """``RUN/results.json`` (or the file itself) of a finished ``evaluate`` run (``complete: true``, `run_state`)."""
    return load_complete_results(run)


def _cp(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    lo, hi = clopper_pearson(k, n, alpha)
    return float(lo), float(hi)


def _confusion(doc: Mapping[str, Any]) -> Iterator[Value]:
    for m in doc.get("confusion", {}).get("metrics", []):
        if m.get("label") == "empty":
            continue
        where = "pooled" if m["bin"] == "pooled" else f"[{m['lo']:g}, {m['hi']:g}) m"
        for rate, n_key, k_key in (("recall", "ground_truth", "true_positives"), ("precision", "predicted", None)):
            v = m.get(rate)
            if v is None:
                continue
            lo, hi = m.get(f"{rate}_lower"), m.get(f"{rate}_upper")
            if lo is None and k_key is not None and m.get(n_key):
                lo, hi = _cp(m[k_key], m[n_key])
            yield Value(f"{rate} '{m['label']}' {where}", "confusion", v, lo, hi, m.get(n_key))


def _pcd(doc: Mapping[str, Any]) -> Iterator[Value]:
    for target, d in doc.get("pcd", {}).items():
        if not isinstance(d, dict) or "pcd" not in d:
            continue
        for key in ("pcd", "mpcd"):
            raw = d.get(key)
            if isinstance(raw, dict):  # {"value", "lower", "upper", "y_t", "p_t"}
                raw = raw.get("value")
            if raw is None:
                continue
            ci = d.get(f"{key}_ci")
            lo, hi = (
                (ci[0], ci[1]) if isinstance(ci, list | tuple) and len(ci) == 2 and None not in ci else (None, None)
            )
            yield Value(f"{key.upper()} '{target}' (m)", "pcd", float(raw), lo, hi, d.get("n"))


def _verification(doc: Mapping[str, Any]) -> Iterator[Value]:
    for r in doc.get("verification", {}).get("results", []):
        key = f"P({r['spec']} | {r['true_env']}) {r['variant']}, V = {r['max_speed']}, v0 = {r['initial_speed']}"
        yield Value(key, "verification", float(r["probability"]), r.get("lower"), r.get("upper"))


def _bbsl(doc: Mapping[str, Any]) -> Iterator[Value]:
    for spec, d in doc.get("bbsl", {}).items():
        for test, row in d.get("table3", {}).items():
            n = row["T"] + row["F"]
            if row.get("rate") is None or n == 0:
                continue
            lo, hi = _cp(row["T"], n)
            yield Value(f"pass rate {test} ({spec})", "bbsl", float(row["rate"]), lo, hi, n)


def _returns(doc: Mapping[str, Any]) -> Iterator[Value]:
    better = {"SG": True, "RH": False, "AC": False, "hazard_f": False}
    for scheme in ("E1", "E2"):
        block = doc.get("returns", {}).get(scheme)
        if not isinstance(block, dict):
            continue
        for avg in ("frames", "episodes"):
            m = block.get(avg, {})
            for key, hib in better.items():
                if key in m:
                    yield Value(
                        f"{key} ({scheme}, per {avg[:-1]})",
                        "returns",
                        float(m[key]),
                        n=m.get("n"),
                        higher_is_better=hib,
                    )


def metrics_of(doc: Mapping[str, Any]) -> dict[str, Value]:
    """Every comparable number of one results.json, by a stable key."""
    out: dict[str, Value] = {}
    for source in (_confusion, _pcd, _verification, _bbsl, _returns):
        for v in source(doc):
            out[v.key] = v
    return out


def _interval(v: Value) -> tuple[float, float] | None:
    return (float(v.lower), float(v.upper)) if v.lower is not None and v.upper is not None else None


def compare_values(a: Value, b: Value, tolerance: float = 1e-12) -> Row:
    """A vs B of one metric."""
    ia, ib = _interval(a), _interval(b)
    significant = None if ia is None or ib is None else (ia[1] < ib[0] or ib[1] < ia[0])
    diff = b.value - a.value
    if abs(diff) <= tolerance:
        change = "same"
    elif a.higher_is_better is None:
        change = "changed"
    else:
        change = "better" if (diff > 0) == a.higher_is_better else "worse"
    return Row(a.key, a.group, a.value, b.value, diff, ia, ib, a.n, b.n, significant, change)


def _requirements(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    items = doc.get("requirements", {}).get("items", []) if isinstance(doc.get("requirements"), dict) else []
    return {str(i.get("label")): i for i in items}


def compare(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison document: shared metrics (rows), metrics only in one run, requirements side by side."""
    from perception_safety.pipeline.compare_checks import differences, pairing
    from perception_safety.pipeline.compare_paired import apply_paired

    ma, mb = metrics_of(doc_a), metrics_of(doc_b)
    mode = pairing(doc_a, doc_b)
    rows = apply_paired([compare_values(ma[k], mb[k]) for k in ma if k in mb], doc_a, doc_b, mode)
    ra, rb = _requirements(doc_a), _requirements(doc_b)
    reqs = []
    for label in dict.fromkeys([*ra, *rb]):
        sa, sb = ra.get(label, {}).get("status"), rb.get(label, {}).get("status")
        reqs.append(
            {
                "label": label,
                "a": sa,
                "b": sb,
                "a_value": ra.get(label, {}).get("value"),
                "b_value": rb.get(label, {}).get("value"),
                "regressed": sa == "PASS" and sb is not None and sb != "PASS",
            }
        )
    worse_sig = [r.key for r in rows if r.change == "worse" and r.significant]
    return {
        "format": COMPARE_FORMAT,
        "pairing": mode,
        "warnings": differences(doc_a, doc_b),
        "definitions": {
            "diff": "B - A",
            "pairing": "paired: both runs read the same inputs (content hashes), so each object was judged by both; "
            "independent: no input in common; overlapping: some shared (the independent rule is used)",
            "significant": "paired runs, recall/precision: the 95 % paired-bootstrap interval of B - A over episodes "
            "excludes 0 (without episodes: McNemar's exact test at the worst-case discordance, p < 0.05); otherwise "
            "both runs give an interval and the intervals do not overlap (conservative); null when a run has no "
            "interval for the metric ('test' names the rule of each row)",
            "change": "better/worse for B by the metric's direction (higher recall, precision, PCD, P(phi), pass "
            "rate and SG are better; lower RH, AC, hazard are better)",
        },
        "rows": [asdict(r) for r in rows],
        "only_in_a": sorted(set(ma) - set(mb)),
        "only_in_b": sorted(set(mb) - set(ma)),
        "requirements": reqs,
        "summary": {
            "shared": len(rows),
            "better": sum(r.change == "better" for r in rows),
            "worse": sum(r.change == "worse" for r in rows),
            "significantly_better": sum(r.change == "better" and bool(r.significant) for r in rows),
            "significantly_worse": len(worse_sig),
            "requirements_regressed": [q["label"] for q in reqs if q["regressed"]],
        },
    }


def exit_code(doc: Mapping[str, Any], fail_on: str) -> int:
    """0 = B acceptable; 1 = B regressed under ``fail_on`` ('significant', 'any' or 'never')."""
    s = doc["summary"]
    if fail_on == "never":
        return 0
    regressed = bool(s["requirements_regressed"])
    if fail_on == "any":
        return 1 if s["worse"] or regressed else 0
    return 1 if s["significantly_worse"] or regressed else 0
