"""Verdicts of requirements against an evaluation's results document (``results.json``, a plain dict).

A requirement is PASS or FAIL only when its number was computed in this run; otherwise it is
NOT EVALUATED (the analysis did not run, the row is missing, the value is undefined, or the interval
bound asked for was not produced), never PASS. A number resting on fewer independent clusters (episodes)
than ``min_clusters`` is INCONCLUSIVE (never PASS; FAIL when the estimate itself already misses the
threshold, since every valid bound lies beyond it). Recall and precision get their bounds here from the
counts (cluster-aware from the per-episode counts when the results carry them, `confusion.rates`), BBSL
pass rates from T of T+F; verification, PCD and returns bounds are read from the result rows
(``lower`` / ``upper``, and ``clusters`` where the analysis states its independent units). A verification row
whose chain found runs of misses is read from its memory chain (``memory_*``); a row the analysis marks
inconclusive (``inconclusive_reason``: the independence of consecutive observations cannot be established)
makes the requirement INCONCLUSIVE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perception_safety.evaluation.clustered import MIN_CLUSTERS, ClusteredProportion, plain_proportion, proportion
from perception_safety.evaluation.confusion.io import confusion_from_mapping
from perception_safety.evaluation.confusion.rates import precision_of, recall_of
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.requirements.config import (
    APRequirement,
    BBSLRequirement,
    PCDRequirement,
    RateRequirement,
    RequirementBase,
    ReturnsRequirement,
    VerificationRequirement,
)

PASS, FAIL, NOT_EVALUATED, INCONCLUSIVE = "PASS", "FAIL", "NOT EVALUATED", "INCONCLUSIVE"
STATUSES = (PASS, FAIL, INCONCLUSIVE, NOT_EVALUATED)


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
    clusters: int | None = None
    """Independent units (episodes) behind the number; None = not known (frames taken as independent)."""
    design_effect: float | None = None
    effective_n: float | None = None
    inconclusive: str = ""
    """Why the analysis itself calls the number inconclusive (a verification row's status), empty when it does not."""
    judged_on: str = ""
    """A bound that replaces ``bound: point`` (the memory chain's P(φ) is never judged on its point), else empty."""

    def value(self, bound: str) -> float | None:
        """The figure a requirement with ``bound`` compares (``judged_on`` first)."""
        return {"point": self.point, "lower": self.lower, "upper": self.upper}[self.judged_on or bound]


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
    clusters: int | None = None
    design_effect: float | None = None
    effective_n: float | None = None
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
    return _proportion(plain_proportion(k, n, alpha), detail)


def _proportion(r: ClusteredProportion, detail: str) -> Measured:
    if r.trials <= 0 or r.point is None:
        return Measured(n=0, missing=f"no samples ({detail})")
    return Measured(
        r.point, r.lower, r.upper, r.trials, f"{r.basis()} ({detail})", "", r.clusters, r.design_effect, r.effective_n
    )


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
    keys = [_memory_key(row, key, worst_low) for row in rows]
    values = [_num(row.get(k)) for row, k in zip(rows, keys, strict=True)]
    if any(v is None for v in values):
        return Measured(missing=f"the {len(rows)} matching verification row(s) carry no '{key}' value")
    i = int(np.argmin(values) if worst_low else np.argmax(values))
    row, mem = rows[i], keys[i].startswith("memory_")
    where = f"{row['variant']}, env {row['true_env']}, V = {row['max_speed']}, v0 = {row['initial_speed']}"
    detail = f"{'min' if worst_low else 'max'} over {len(rows)} row(s), at {where}"
    if mem:
        detail += "; misses come in runs: P(phi) of the chain with one step of observation memory"
    counts = [row.get(k) for k in ("clusters", "memory_clusters" if mem else "clusters")]
    clusters = min((c for c in counts if isinstance(c, int)), default=None)
    reasons = list(dict.fromkeys(str(q["inconclusive_reason"]) for q in rows if q.get("inconclusive_reason")))
    if not mem:
        return Measured(
            _num(row.get("probability")), _num(row.get("lower")), _num(row.get("upper")), None, detail,
            clusters=clusters, inconclusive="; ".join(reasons),
        )
    lower, upper = (_num(row.get(_memory_key(row, k, worst_low))) for k in ("lower", "upper"))
    judged_on = ""
    if r.bound == "point":
        judged_on = "lower" if worst_low else "upper"
        detail += f" (judged on its {judged_on} bound: a point from conditional columns is not a verdict)"
    if keys[i].startswith("memory_posterior_"):
        detail += "; bounds: the memory chain's posterior credible interval (no interval-chain bounds)"
    return Measured(_num(row.get("memory_probability")), lower, upper, None, detail, clusters=clusters,
                    inconclusive="; ".join(reasons), judged_on=judged_on)


def _memory_key(row: Mapping[str, Any], key: str, worst_low: bool = True) -> str:
    """The memory chain's figure where the row's chain found runs of misses (issue 24 items 9 and 3), else ``key``:
    never its point (``probability`` reads the conservative bound), its posterior bound where the interval chain
    gave none."""
    if row.get("independence") != "memory":
        return key
    if key == "probability":
        key = "lower" if worst_low else "upper"
    if _num(row.get(f"memory_{key}")) is None and _num(row.get(f"memory_posterior_{key}")) is not None:
        return f"memory_posterior_{key}"
    return f"memory_{key}"


def _class_confusion(doc: Mapping[str, Any]) -> DistanceConfusion:
    """The class-labeled part of results.json's ``confusion`` (the proposition matrices are not needed here)."""
    data = dict(doc)
    if "prop_labels" not in data:  # a class-only document: stand-in proposition matrices (never read)
        empty = str(data["class_labels"][-1])
        k = len(data["bin_edges"])
        data |= {"prop_labels": [empty], "prop_cm": [[[0]]] * k, "prop_cm_pooled": [[0]]}
    return confusion_from_mapping(data, "results.json confusion")


def _confusion_rate(r: RateRequirement, results: Mapping[str, Any], alpha: float) -> Measured:
    doc = results.get("confusion")
    if not isinstance(doc, Mapping):
        return Measured(missing="the confusion analysis did not run")
    dc = _class_confusion(doc)
    c = dc.class_labels.index(r.class_)
    if r.distance is None:
        bins, span = None, "pooled"
    else:
        lo, hi = r.distance
        bins = [k for k, (a, b) in enumerate(dc.bin_edges) if a >= lo and b <= hi]
        if not bins:
            return Measured(missing=f"no bin lies within [{lo:g}, {hi:g}] m")
        span = f"bins [{dc.bin_edges[bins[0]][0]:g}, {dc.bin_edges[bins[-1]][1]:g}) m"
    clustered = "cluster-aware (Korn-Graubard with beta-binomial profile)"
    method = clustered if dc.clusters is not None else "Clopper-Pearson"
    level = f"{100 * (1 - alpha):g} % {method}"
    if r.metric == "recall":
        return _proportion(recall_of(dc, c, bins, alpha), f"objects of '{r.class_}', {span}, {level}")
    prec = precision_of(dc, c, bins, alpha)
    if prec is None and bins is None:
        return Measured(
            missing="the results carry no count of unmatched detections (report.detections_unannotated_by_class)"
        )
    if prec is None:
        return Measured(
            missing=f"precision of '{r.class_}' over {span} needs the distance of unmatched detections "
            "(confusion.ground_camera); only the pooled precision counts them without it"
        )
    what = f"detections of '{r.class_}' incl. unmatched (false positives)"
    return _proportion(prec, f"{what}, {span}, {level}")


def _ap(r: APRequirement, results: Mapping[str, Any]) -> Measured:
    entry = _get(results, "detection_ap", r.class_)
    if not isinstance(entry, Mapping):
        return Measured(missing=f"no AP for class '{r.class_}' (the detection_ap analysis did not run)")
    span = "pooled" if r.distance is None else f"[{r.distance[0]:g}, {r.distance[1]:g})"
    cell = entry["pooled"] if r.distance is None else _get(entry, "bins", span)
    if not isinstance(cell, Mapping):
        return Measured(missing=f"no AP cell {span} m for '{r.class_}'")
    n = cell.get("ground_truth")
    if cell.get(r.name) is None:
        return Measured(n=n, missing=f"{r.name.upper()} of '{r.class_}' {span} undefined: no ground truth there")
    detail = f"{r.name.upper()} of '{r.class_}', {span} m, {n} objects; {cell.get('interval_note', '')}"
    return Measured(_num(cell[r.name]), _num(cell.get(f"{r.name}_lower")), _num(cell.get(f"{r.name}_upper")), n,
                    detail)  # fmt: skip


def _pcd(r: PCDRequirement, results: Mapping[str, Any]) -> Measured:
    doc = _get(results, "pcd", r.target)
    if not isinstance(doc, Mapping):
        return Measured(missing=f"no PCD result for target '{r.target}' (analysis not run)")
    if "error" in doc:
        return Measured(n=doc.get("n"), missing=f"PCD of '{r.target}' not computed: {doc['error']}")
    n = doc.get("n")
    groups = _get(doc, "bootstrap", "n_groups")
    units = groups if isinstance(groups, int) and _get(doc, "bootstrap", "unit") in ("episode", "track") else None
    if r.name == "mpcd":
        ci = doc.get("mpcd_ci") or _get(doc, "bootstrap", "mpcd") or {}
        lo = _get(ci, "lower") if isinstance(ci, Mapping) else _get(ci, 0)
        hi = _get(ci, "upper") if isinstance(ci, Mapping) else _get(ci, 1)
        lo = lo if lo is not None else doc.get("mpcd_lower")
        hi = hi if hi is not None else doc.get("mpcd_upper")
        return Measured(_num(doc.get("mpcd")), _num(lo), _num(hi), n, f"mPCD of '{r.target}' (m)", clusters=units)
    head = doc.get("pcd") or {}
    y_t = head.get("y_t") if r.y_t is None else r.y_t
    p_t = head.get("p_t") if r.p_t is None else r.p_t
    where = f"PCD of '{r.target}' at y_t = {y_t}, p_t = {p_t} (m)"
    if y_t == head.get("y_t") and p_t == head.get("p_t"):
        return Measured(
            _num(head.get("value")), _num(head.get("lower")), _num(head.get("upper")), n, where, clusters=units
        )
    grid = doc.get("grid") or {}
    try:
        i, j = list(grid["y_t"]).index(y_t), list(grid["p_t"]).index(p_t)
    except (KeyError, ValueError):
        return Measured(n=n, missing=f"{where}: not on the computed grid")
    return Measured(
        _num(_get(grid, "pcd", i, j)),
        _num(_get(grid, "lower", i, j)),
        _num(_get(grid, "upper", i, j)),
        n,
        where,
        clusters=units,
    )


def _returns(r: ReturnsRequirement, results: Mapping[str, Any]) -> Measured:
    block = _get(results, "returns", r.scheme.upper(), r.average)
    if not isinstance(block, Mapping):
        return Measured(missing=f"no {r.scheme.upper()} returns in this run (no episode logs, or the scheme failed)")
    key = r.name.upper() if r.name != "hazard_f" else r.name
    episodes = block.get("episodes", block.get("n") if r.average == "episodes" else None)
    method = block.get("interval")
    return Measured(
        _num(block.get(key)),
        _num(block.get(f"{key}_lower")),
        _num(block.get(f"{key}_upper")),
        block.get("n"),
        f"{key} under {r.scheme.upper()}, averaged over {r.average}" + (f", {method}" if method else ""),
        clusters=episodes if isinstance(episodes, int) else None,
    )


def _bbsl(r: BBSLRequirement, results: Mapping[str, Any], alpha: float) -> Measured:
    row = _get(results, "bbsl", r.spec, "table3", "bbsl" if r.name == "pass_rate" else r.name)
    if not isinstance(row, Mapping):
        return Measured(missing=f"no BBSL result for spec '{r.spec}' (analysis not run)")
    t, f = int(row["T"]), int(row["F"])
    per = _get(results, "bbsl", r.spec, "by_episode")
    if r.name == "pass_rate" and isinstance(per, Mapping):  # test cases clustered by episode
        what = f"test cases T of T+F, spec '{r.spec}', {100 * (1 - alpha):g} % cluster-aware (episodes)"
        return _proportion(proportion(t, t + f, (per["T"], per["n"]), alpha), what)
    return _rate(t, t + f, alpha, f"test cases T of T+F, spec '{r.spec}', {100 * (1 - alpha):g} % Clopper-Pearson")


def measure(req: RequirementBase, results: Mapping[str, Any], alpha: float = 0.05) -> Measured:
    """The number ``req`` refers to in ``results``, with its interval and sample count when known."""
    if isinstance(req, VerificationRequirement):
        return _verification(req, results)
    if isinstance(req, RateRequirement):
        return _confusion_rate(req, results, alpha)
    if isinstance(req, APRequirement):
        return _ap(req, results)
    if isinstance(req, PCDRequirement):
        return _pcd(req, results)
    if isinstance(req, ReturnsRequirement):
        return _returns(req, results)
    if isinstance(req, BBSLRequirement):
        return _bbsl(req, results, alpha)
    raise TypeError(f"unknown requirement type {type(req).__name__}")


def judge(req: RequirementBase, m: Measured, min_clusters: int = MIN_CLUSTERS) -> tuple[str, str]:
    """``(status, detail)`` of one requirement on its measured number (module docstring)."""
    value = m.value(req.bound)
    op, thr = req.threshold
    if m.missing:
        return NOT_EVALUATED, m.missing
    if value is None:
        return NOT_EVALUATED, f"no {m.judged_on or req.bound} value ({m.detail})"
    ok = value >= thr if op == ">=" else value <= thr
    if m.inconclusive:
        return INCONCLUSIVE, f"{m.detail}; {m.inconclusive}"
    if m.clusters is not None and m.clusters < min_clusters:
        point_misses = m.point is not None and (m.point < thr if op == ">=" else m.point > thr)
        bound = m.judged_on or req.bound
        beyond_point = bound == "point" or (bound == "lower") == (op == ">=")
        if point_misses and beyond_point:
            return FAIL, f"{m.detail}; the estimate itself misses the threshold (only {m.clusters} clusters)"
        return INCONCLUSIVE, (
            f"{m.detail}; only {m.clusters} independent cluster(s) (episodes/tracks), fewer than {min_clusters}: "
            f"the data cannot support a {'PASS' if ok else 'verdict'}"
        )
    return (PASS if ok else FAIL), m.detail


def check(
    reqs: Sequence[RequirementBase], results: Mapping[str, Any], alpha: float = 0.05, min_clusters: int = MIN_CLUSTERS
) -> list[Verdict]:
    """PASS / FAIL / INCONCLUSIVE / NOT EVALUATED for every requirement, in config order."""
    out = []
    for i, req in enumerate(reqs):
        m = measure(req, results, alpha)
        value = m.value(req.bound)
        op, thr = req.threshold
        status, detail = judge(req, m, min_clusters)
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
                clusters=m.clusters,
                design_effect=m.design_effect,
                effective_n=m.effective_n,
            )
        )
    return out


def summary(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The ``requirements`` block of results.json: counts, overall verdict and one entry per requirement.

    Overall: FAIL if any failed, else INCONCLUSIVE if any was, else NOT EVALUATED if any was not evaluated,
    else PASS (none = PASS, empty). Only PASS passes ``evaluate --check``.
    """
    counts = {s: sum(v.status == s for v in verdicts) for s in STATUSES}
    overall = next((s for s in (FAIL, INCONCLUSIVE, NOT_EVALUATED) if counts[s]), PASS)
    return {
        "overall": overall,
        "passed": counts[PASS],
        "failed": counts[FAIL],
        "inconclusive": counts[INCONCLUSIVE],
        "not_evaluated": counts[NOT_EVALUATED],
        "items": [v.to_dict() for v in verdicts],
    }
