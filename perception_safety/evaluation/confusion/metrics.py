"""Per-bin, per-class recall, precision and false-negative rate from class-labeled matrices.

With ``cm[pred, true]`` and ``e`` the ``empty`` row: ``tp = cm[c, c]``, ``gt = Σ_i cm[i, c]``,
``missed = cm[e, c]`` (Remark 1), ``confused = gt - tp - missed``, ``predicted = Σ_j cm[c, j]``.
recall = tp / gt, false-negative rate = (gt - tp) / gt = 1 - recall, miss rate = missed / gt,
precision = tp / predicted. Precision counts only detections matched to annotated objects
(unannotated detections are ignored, Remark 1). A rate with a zero denominator is ``None``.
Recall and precision carry two-sided Clopper-Pearson intervals at level ``1 - alpha``
(`perception_safety.evaluation.intervals`); ``thin`` marks a rate from fewer than ``min_samples``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.intervals import clopper_pearson


@dataclass(frozen=True)
class ClassMetrics:
    """Counts and rates of one class in one bin (or pooled)."""

    bin: str
    lo: float
    hi: float
    label: str
    ground_truth: int
    true_positives: int
    missed: int
    confused: int
    predicted: int
    recall: float | None
    precision: float | None
    false_negative_rate: float | None
    miss_rate: float | None
    recall_lower: float | None = None
    recall_upper: float | None = None
    precision_lower: float | None = None
    precision_upper: float | None = None
    thin: bool = False
    """Recall or precision rests on fewer than ``min_samples`` samples (flagged, never silently used)."""


def _rate(num: int, den: int) -> float | None:
    return num / den if den > 0 else None


def _interval(k: int, n: int, alpha: float) -> tuple[float | None, float | None]:
    if n <= 0:
        return None, None
    lo, hi = clopper_pearson(k, n, alpha)
    return float(lo), float(hi)


def class_metrics_of(
    cm: np.ndarray,
    labels: tuple[str, ...],
    name: str,
    lo: float,
    hi: float,
    alpha: float = 0.05,
    min_samples: int = 1,
) -> list[ClassMetrics]:
    """Metrics of every evaluation class (all labels but the trailing ``empty``) of one matrix."""
    e = len(labels) - 1
    out = []
    for c, label in enumerate(labels[:-1]):
        gt = int(cm[:, c].sum())
        tp = int(cm[c, c])
        missed = int(cm[e, c])
        predicted = int(cm[c, :].sum())
        r_lo, r_hi = _interval(tp, gt, alpha)
        p_lo, p_hi = _interval(tp, predicted, alpha)
        out.append(
            ClassMetrics(
                bin=name,
                lo=lo,
                hi=hi,
                label=label,
                ground_truth=gt,
                true_positives=tp,
                missed=missed,
                confused=gt - tp - missed,
                predicted=predicted,
                recall=_rate(tp, gt),
                precision=_rate(tp, predicted),
                false_negative_rate=_rate(gt - tp, gt),
                miss_rate=_rate(missed, gt),
                recall_lower=r_lo,
                recall_upper=r_hi,
                precision_lower=p_lo,
                precision_upper=p_hi,
                thin=0 < gt < min_samples or 0 < predicted < min_samples,
            )
        )
    return out


def class_metrics(dc: DistanceConfusion, alpha: float = 0.05, min_samples: int = 1) -> list[ClassMetrics]:
    """Metrics per bin and class of the class-labeled matrices, then the pooled ones (bin ``pooled``)."""
    rows: list[ClassMetrics] = []
    for k, (lo, hi) in enumerate(dc.bin_edges):
        rows += class_metrics_of(dc.class_cm[k], dc.class_labels, str(k), lo, hi, alpha, min_samples)
    lo, hi = dc.bin_edges[0][0], dc.bin_edges[-1][1]
    rows += class_metrics_of(dc.class_cm_pooled, dc.class_labels, "pooled", lo, hi, alpha, min_samples)
    return rows


def metrics_to_json(rows: list[ClassMetrics]) -> list[dict[str, Any]]:
    """Plain dicts for JSON output (``None`` stays ``null``)."""
    return [asdict(r) for r in rows]
