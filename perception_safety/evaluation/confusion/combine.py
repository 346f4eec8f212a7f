"""Sums of distance-binned confusion matrices from separate runs, bags or files (the reduce over inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.clusters import merge_all
from perception_safety.evaluation.confusion.types import DistanceConfusion

UNMATCHED_BY_BIN = "detections_unannotated_by_bin"
"""Report key: unmatched detections per class and distance bin (only when their distance could be estimated)."""


def sum_confusions(parts: list[DistanceConfusion], source: str = "") -> DistanceConfusion:
    """Element-wise sum of matrices with equal bins and labels (the reduce over bags or files).

    Pooled matrices are summed when all parts were pooled the same way; otherwise every part's
    pooled matrix is replaced by its sum over bins (``pooled_method="sum_of_bins"``).
    """
    if not parts:
        raise ValueError("sum_confusions: nothing to sum")
    first = parts[0]
    for p in parts[1:]:
        for attr in ("bin_edges", "class_labels", "prop_labels"):
            if getattr(p, attr) != getattr(first, attr):
                raise ValueError(
                    f"{p.source or 'matrices'}: {attr} {list(getattr(p, attr))} differ from "
                    f"{first.source or 'the first input'}'s {list(getattr(first, attr))}"
                )
    same = len({p.pooled_method for p in parts}) == 1
    report: dict[str, Any] = {}
    for p in parts:
        for key, value in p.report.items():
            if isinstance(value, int) and not isinstance(value, bool):
                report[key] = report.get(key, 0) + value
            elif isinstance(value, dict) and all(isinstance(v, int) for v in value.values()):
                merged = report.setdefault(key, {})
                for k2, v2 in value.items():
                    merged[k2] = merged.get(k2, 0) + v2
            elif key == UNMATCHED_BY_BIN and isinstance(value, dict):
                merged = report.setdefault(key, {})
                for k2, v2 in value.items():
                    merged[k2] = (
                        np.asarray(merged.get(k2, 0), dtype=np.int64) + np.asarray(v2, dtype=np.int64)
                    ).tolist()
    if not all(UNMATCHED_BY_BIN in p.report for p in parts):  # per-bin false positives only when every part has them
        report.pop(UNMATCHED_BY_BIN, None)
    return DistanceConfusion(
        bin_edges=first.bin_edges,
        class_labels=first.class_labels,
        prop_labels=first.prop_labels,
        class_cm=sum(p.class_cm for p in parts),
        prop_cm=sum(p.prop_cm for p in parts),
        class_cm_pooled=sum((p.class_cm_pooled if same else p.class_cm.sum(axis=0)) for p in parts),
        prop_cm_pooled=sum((p.prop_cm_pooled if same else p.prop_cm.sum(axis=0)) for p in parts),
        pooled_method=first.pooled_method if same else "sum_of_bins",
        source=source or " + ".join(p.source for p in parts if p.source),
        report=report,
        clusters=merge_all([p.clusters for p in parts]),
    )
