"""Paired significance for the recall/precision rows of two runs on the same inputs (`evaluation.paired`).

The per-episode counts come from each run's ``confusion.clusters`` (class-labeled counts per episode); a row is
tested paired only when those counts reproduce the row's own values in both runs (else it keeps the interval
rule and says why). Without per-episode counts, recall rows whose object counts agree get McNemar's worst case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from perception_safety.evaluation.paired import PairedResult, mcnemar_worst_case, paired_bootstrap

DISJOINT = "disjoint 95 % intervals (independent runs)"


def _where(m: Mapping[str, Any]) -> str:
    return "pooled" if m["bin"] == "pooled" else f"[{m['lo']:g}, {m['hi']:g}) m"


def _episode_counts(doc: Mapping[str, Any], rate: str, label: str, where: str) -> tuple[list[str], np.ndarray,
                                                                                      np.ndarray] | None:
    """``(episode ids, k per episode, n per episode)`` of one rate, or None without per-episode counts."""
    conf = doc.get("confusion") or {}
    cl = conf.get("clusters")
    labels = conf.get("class_labels") or []
    if not isinstance(cl, Mapping) or label not in labels:
        return None
    c = labels.index(label)
    if where == "pooled":
        cm = np.asarray(cl["class_cm_pooled"], dtype=np.int64)  # [e, pred, true]
        un = np.asarray(cl["unmatched"], dtype=np.int64).sum(axis=1)  # [e, class]
    else:
        edges = [f"[{lo:g}, {hi:g}) m" for lo, hi in conf.get("bin_edges", [])]
        if where not in edges:
            return None
        b = edges.index(where)
        cm = np.asarray(cl["class_cm"], dtype=np.int64)[:, b]
        un = np.asarray(cl["unmatched"], dtype=np.int64)[:, b]
    tp = cm[:, c, c]
    unmatched = un[:, c] if c < un.shape[1] else 0
    n = cm[:, :, c].sum(axis=1) if rate == "recall" else cm[:, c, :].sum(axis=1) + unmatched
    return [str(i) for i in cl["ids"]], tp, n


def _consistent(k: np.ndarray, n: np.ndarray, value: float) -> bool:
    return int(n.sum()) > 0 and abs(float(k.sum()) / float(n.sum()) - value) < 1e-9


def test_row(row: Any, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any], alpha: float = 0.05
             ) -> tuple[PairedResult | None, str]:
    """The paired test of one confusion row (key ``"<rate> '<label>' <where>"``), or None and the reason."""
    rate, rest = row.key.split(" ", 1)
    label, where = rest[1:].split("' ", 1)
    ca, cb = _episode_counts(doc_a, rate, label, where), _episode_counts(doc_b, rate, label, where)
    if ca is not None and cb is not None:
        ids = [e for e in ca[0] if e in set(cb[0])]
        ia = [ca[0].index(e) for e in ids]
        ib = [cb[0].index(e) for e in ids]
        ka, na, kb, nb = ca[1][ia], ca[2][ia], cb[1][ib], cb[2][ib]
        if len(ids) >= 2 and _consistent(ka, na, row.a) and _consistent(kb, nb, row.b):
            return paired_bootstrap(ka, na, kb, nb, alpha), ""
        if len(ids) < 2:
            return None, "fewer than 2 shared episodes"
        return None, "the per-episode counts do not reproduce the row (another precision definition)"
    if rate == "recall" and row.a_n is not None and row.a_n == row.b_n and row.a_n > 0:
        n = int(row.a_n)
        return mcnemar_worst_case(round(row.a * n), round(row.b * n), n, alpha), ""
    return None, "no per-episode counts and no equal object count"


def apply_paired(rows: list[Any], doc_a: Mapping[str, Any], doc_b: Mapping[str, Any], mode: str) -> list[Any]:
    """Rows with their test named; confusion rows of paired runs tested paired where the counts allow."""
    out = []
    for r in rows:
        if mode != "paired" or r.group != "confusion" or not r.key.startswith(("recall ", "precision ")):
            test = DISJOINT if mode == "independent" else f"disjoint 95 % intervals (conservative; runs {mode})"
            out.append(replace(r, test=test))
            continue
        res, why = test_row(r, doc_a, doc_b)
        if res is None:
            out.append(replace(r, test=f"disjoint 95 % intervals (conservative; paired test not possible: {why})"))
            continue
        out.append(replace(r, test=res.method, significant=res.significant, diff_interval=(
            (res.lower, res.upper) if res.lower is not None else None), p_value=res.p_value))
    return out
