"""Verdicts of requirements against an evaluation's results document (``results.json``, a plain dict).

A requirement is PASS or FAIL only when its number was computed in this run; otherwise it is
NOT EVALUATED (the analysis did not run, the row is missing, the value is undefined, or the interval
bound asked for was not produced), never PASS. Rates (recall, precision, BBSL pass rates) get their
Clopper-Pearson bounds here from the counts; verification and PCD bounds are read from the result rows
(``lower`` / ``upper``), so they appear as soon as the analysis writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.evaluation.requirements.config import (
    BBSLRequirement,
    PCDRequirement,
    RateRequirement,
    RequirementBase,
    ReturnsRequirement,
    VerificationRequirement,
)

PASS, FAIL, NOT_EVALUATED = "PASS", "FAIL", "NOT EVALUATED"


@dataclass(frozen=True)
class Measured:
    """The number a requirement looks at: point estimate, interval (when known), sample count, provenance."""

    point: float | None = None
    lower: float | None = None
    upper: float | None = None
    n: int | None = None
    detail: str = ""
    missing: str = ""
    """Why nothing was measured (empty when something was)."""


@dataclass(frozen=True)
class Verdict:
    """One requirement's outcome, JSON-ready via `to_dict`."""

    label: str
    metric: str
    selectors: dict[str, Any]
    bound: str
    op: str
    threshold: float
    status: str
    value: float | None
    point: float | None
    lower: float | None
    upper: float | None
    n: int | None
    detail: str = ""
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("extra")
        return d


def _get(doc: Any, *keys: Any) -> Any:
    for k in keys:
        in_list = isinstance(doc, list) and isinstance(k, int) and 0 <= k < len(doc)
        if (isinstance(doc, Mapping) and k in doc) or in_list:
            doc = doc[k]
        else:
            return None
    return doc


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v) else None


def _rate(k: int, n: int, alpha: float, detail: str) -> Measured:
    if n <= 0:
        return Measured(n=0, missing=f"no samples ({detail})")
    lo, hi = clopper_pearson(k, n, alpha)
    return Measured(k / n, float(lo), float(hi), n, f"{k} of {n} ({detail})")


def _verification(r: VerificationRequirement, results: Mapping[str, Any]) -> Measured:
    block = results.get("verification")
    if not isinstance(block, Mapping):
        return Measured(missing="the verification analysis did not run")
    want = {"spec": r.spec, "variant": r.variant, "true_env": r.true_env}
    want |= {"initial_speed": r.initial_speed, "max_speed": r.max_speed}
    rows = [row for row in block.get("results", []) if all(v is None or row.get(k) == v for k, v in want.items())]
    if not rows:
        skipped = "; ".join(f"{k}: {v}" for k, v in (block.get("skipped") or {}).items())
        return Measured(missing="no verification result matches" + (f" (skipped: {skipped})" if skipped else ""))
    worst_low = r.at_least is not None
    key = {"point": "probability", "lower": "lower", "upper": "upper"}[r.bound]
    values = [_num(row.get(key)) for row in rows]
    if any(v is None for v in values):
        return Measured(missing=f"the {len(rows)} matching verification row(s) carry no '{key}' value")
    i = int(np.argmin(values) if worst_low else np.argmax(values))
    row = rows[i]
    where = f"{row['variant']}, env {row['true_env']}, V = {row['max_speed']}, v0 = {row['initial_speed']}"
    detail = f"{'min' if worst_low else 'max'} over {len(rows)} row(s), at {where}"
    return Measured(_num(row.get("probability")), _num(row.get("lower")), _num(row.get("upper")), None, detail)


def _confusion_rate(r: RateRequirement, results: Mapping[str, Any], alpha: float) -> Measured:
    doc = results.get("confusion")
    if not isinstance(doc, Mapping):
        return Measured(missing="the confusion analysis did not run")
    labels = list(doc["class_labels"])
    c = labels.index(r.class_)
    if r.distance is None:
        cm = np.asarray(doc["class_cm_pooled"], dtype=np.int64)
        span = "pooled"
    else:
        lo, hi = r.distance
        edges = doc["bin_edges"]
        sel = [k for k, (a, b) in enumerate(edges) if a >= lo and b <= hi]
        if not sel:
            return Measured(missing=f"no bin lies within [{lo:g}, {hi:g}] m")
        cm = np.asarray(doc["class_cm"], dtype=np.int64)[sel].sum(axis=0)
        span = f"bins [{edges[sel[0]][0]:g}, {edges[sel[-1]][1]:g}) m"
    tp = int(cm[c, c])
    n = int(cm[:, c].sum()) if r.metric == "recall" else int(cm[c, :].sum())
    what = "objects" if r.metric == "recall" else "predictions"
    return _rate(tp, n, alpha, f"{what} of '{r.class_}', {span}, {100 * (1 - alpha):g} % Clopper-Pearson")


def _pcd(r: PCDRequirement, results: Mapping[str, Any]) -> Measured:
    doc = _get(results, "pcd", r.target)
    if not isinstance(doc, Mapping):
        return Measured(missing=f"no PCD result for target '{r.target}' (analysis not run)")
    if "error" in doc:
        return Measured(n=doc.get("n"), missing=f"PCD of '{r.target}' not computed: {doc['error']}")
    n = doc.get("n")
    if r.name == "mpcd":
        ci = doc.get("mpcd_ci") or _get(doc, "bootstrap", "mpcd") or {}
        lo = _get(ci, "lower") if isinstance(ci, Mapping) else _get(ci, 0)
        hi = _get(ci, "upper") if isinstance(ci, Mapping) else _get(ci, 1)
        lo = lo if lo is not None else doc.get("mpcd_lower")
        hi = hi if hi is not None else doc.get("mpcd_upper")
        return Measured(_num(doc.get("mpcd")), _num(lo), _num(hi), n, f"mPCD of '{r.target}' (m)")
    head = doc.get("pcd") or {}
    y_t = head.get("y_t") if r.y_t is None else r.y_t
    p_t = head.get("p_t") if r.p_t is None else r.p_t
    where = f"PCD of '{r.target}' at y_t = {y_t}, p_t = {p_t} (m)"
    if y_t == head.get("y_t") and p_t == head.get("p_t"):
        return Measured(_num(head.get("value")), _num(head.get("lower")), _num(head.get("upper")), n, where)
    grid = doc.get("grid") or {}
    try:
        i, j = list(grid["y_t"]).index(y_t), list(grid["p_t"]).index(p_t)
    except (KeyError, ValueError):
        return Measured(n=n, missing=f"{where}: not on the computed grid")
    return Measured(
        _num(_get(grid, "pcd", i, j)), _num(_get(grid, "lower", i, j)), _num(_get(grid, "upper", i, j)), n, where
    )


def _returns(r: ReturnsRequirement, results: Mapping[str, Any]) -> Measured:
    block = _get(results, "returns", r.scheme.upper(), r.average)
    if not isinstance(block, Mapping):
        return Measured(missing=f"no {r.scheme.upper()} returns in this run (no episode logs, or the scheme failed)")
    key = r.name.upper() if r.name != "hazard_f" else r.name
    return Measured(
        _num(block.get(key)),
        _num(block.get(f"{key}_lower")),
        _num(block.get(f"{key}_upper")),
        block.get("n"),
        f"{key} under {r.scheme.upper()}, averaged over {r.average}",
    )


def _bbsl(r: BBSLRequirement, results: Mapping[str, Any], alpha: float) -> Measured:
    row = _get(results, "bbsl", r.spec, "table3", "bbsl" if r.name == "pass_rate" else r.name)
    if not isinstance(row, Mapping):
        return Measured(missing=f"no BBSL result for spec '{r.spec}' (analysis not run)")
    t, f = int(row["T"]), int(row["F"])
    return _rate(t, t + f, alpha, f"test cases T of T+F, spec '{r.spec}', {100 * (1 - alpha):g} % Clopper-Pearson")


def measure(req: RequirementBase, results: Mapping[str, Any], alpha: float = 0.05) -> Measured:
    """The number ``req`` refers to in ``results``, with its interval and sample count when known."""
    if isinstance(req, VerificationRequirement):
        return _verification(req, results)
    if isinstance(req, RateRequirement):
        return _confusion_rate(req, results, alpha)
    if isinstance(req, PCDRequirement):
        return _pcd(req, results)
    if isinstance(req, ReturnsRequirement):
        return _returns(req, results)
    if isinstance(req, BBSLRequirement):
        return _bbsl(req, results, alpha)
    raise TypeError(f"unknown requirement type {type(req).__name__}")


def check(reqs: Sequence[RequirementBase], results: Mapping[str, Any], alpha: float = 0.05) -> list[Verdict]:
    """PASS / FAIL / NOT EVALUATED for every requirement, in config order."""
    out = []
    for i, req in enumerate(reqs):
        m = measure(req, results, alpha)
        value = {"point": m.point, "lower": m.lower, "upper": m.upper}[req.bound]
        op, thr = req.threshold
        if m.missing:
            status, detail = NOT_EVALUATED, m.missing
        elif value is None:
            status, detail = NOT_EVALUATED, f"no {req.bound} value ({m.detail})"
        else:
            ok = value >= thr if op == ">=" else value <= thr
            status, detail = (PASS if ok else FAIL), m.detail
        out.append(
            Verdict(
                label=req.label(),
                metric=req.metric,  # type: ignore[attr-defined]
                selectors=req.selectors(),
                bound=req.bound,
                op=op,
                threshold=thr,
                status=status,
                value=value if status != NOT_EVALUATED else None,
                point=m.point,
                lower=m.lower,
                upper=m.upper,
                n=m.n,
                detail=detail,
                index=i,
            )
        )
    return out


def summary(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The ``requirements`` block of results.json: counts, overall verdict and one entry per requirement.

    Overall: FAIL if any failed, else NOT EVALUATED if any was not evaluated, else PASS (none = PASS, empty).
    """
    counts = {s: sum(v.status == s for v in verdicts) for s in (PASS, FAIL, NOT_EVALUATED)}
    overall = FAIL if counts[FAIL] else NOT_EVALUATED if counts[NOT_EVALUATED] else PASS
    return {
        "overall": overall,
        "passed": counts[PASS],
        "failed": counts[FAIL],
        "not_evaluated": counts[NOT_EVALUATED],
        "items": [v.to_dict() for v in verdicts],
    }
