"""Per-bin, per-class recall, precision and false-negative rate from class-labeled matrices.

With ``cm[pred, true]`` and ``e`` the ``empty`` row: ``tp = cm[c, c]``, ``gt = Σ_i cm[i, c]``,
``missed = cm[e, c]`` (Remark 1), ``confused = gt - tp - missed``, ``predicted = Σ_j cm[c, j]`` (matched
detections of the class), ``unmatched`` = detections of the class matched to no annotated object.
recall = tp / gt, false-negative rate = 1 - recall, miss rate = missed / gt,
precision = tp / (predicted + unmatched) (unmatched detections are false positives, DESIGN.md; per bin only
when their distance could be estimated, `rates`), precision_matched_only = tp / predicted (class confusion
only). A rate with a zero denominator is ``None``. Recall and precision carry two-sided intervals at level
``1 - alpha``: cluster-aware when the matrices carry per-episode counts, else Clopper-Pearson (`rates`), with
``clusters``, the design effect and the effective sample size beside them; ``thin`` marks a rate from fewer
than ``min_samples``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from perception_safety.evaluation.clustered import ClusteredProportion
from perception_safety.evaluation.confusion.combine import UNMATCHED_BY_BIN as UNMATCHED_PER_BIN
from perception_safety.evaluation.confusion.rates import precision_of, recall_of, unmatched_of
from perception_safety.evaluation.confusion.types import DistanceConfusion


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
    """Detections of the class matched to an annotated object."""
    recall: float | None
    precision: float | None
    """TP / (matched + unmatched detections of the class); None when unmatched ones have no distance here."""
    false_negative_rate: float | None
    miss_rate: float | None
    recall_lower: float | None = None
    recall_upper: float | None = None
    precision_lower: float | None = None
    precision_upper: float | None = None
    thin: bool = False
    """Recall or precision rests on fewer than ``min_samples`` samples (flagged, never silently used)."""
    unmatched: int | None = None
    """Detections of the class matched to no annotated object (None: not placeable in this bin)."""
    precision_matched_only: float | None = None
    precision_matched_only_lower: float | None = None
    precision_matched_only_upper: float | None = None
    clusters: int | None = None
    """Episodes with an object of the class here (None: no cluster information, frames taken as independent)."""
    recall_design_effect: float = 1.0
    recall_effective_n: float | None = None
    precision_design_effect: float = 1.0
    precision_effective_n: float | None = None


def _rate(num: int, den: int) -> float | None:
    return num / den if den > 0 else None


def _bounds(r: ClusteredProportion | None) -> tuple[float | None, float | None]:
    return (None, None) if r is None else (r.lower, r.upper)


def class_metrics_at(
    dc: DistanceConfusion, bins: list[int] | None, name: str, alpha: float = 0.05, min_samples: int = 1,
    precision: bool = True,
) -> list[ClassMetrics]:
    """Metrics of every evaluation class over ``bins`` (None = the pooled matrix); without ``precision`` the
    precision rates and their intervals are not computed (None; ``thin`` then judges recall's samples only)."""
    cm = dc.class_cm_pooled if bins is None else dc.class_cm[bins].sum(axis=0)
    lo = dc.bin_edges[0][0] if bins is None else dc.bin_edges[bins[0]][0]
    hi = dc.bin_edges[-1][1] if bins is None else dc.bin_edges[bins[-1]][1]
    e = len(dc.class_labels) - 1
    out = []
    for c, label in enumerate(dc.class_labels[:-1]):
        gt, tp, missed, predicted = int(cm[:, c].sum()), int(cm[c, c]), int(cm[e, c]), int(cm[c, :].sum())
        rec = recall_of(dc, c, bins, alpha)
        prec = precision_of(dc, c, bins, alpha) if precision else None
        matched = precision_of(dc, c, bins, alpha, matched_only=True) if precision else None
        n_prec = prec.trials if prec is not None else predicted if precision else 0
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
                recall=rec.point,
                precision=None if prec is None else prec.point,
                false_negative_rate=_rate(gt - tp, gt),
                miss_rate=_rate(missed, gt),
                recall_lower=rec.lower,
                recall_upper=rec.upper,
                precision_lower=_bounds(prec)[0],
                precision_upper=_bounds(prec)[1],
                thin=0 < gt < min_samples or 0 < n_prec < min_samples,
                unmatched=unmatched_of(dc, c, bins),
                precision_matched_only=None if matched is None else matched.point,
                precision_matched_only_lower=_bounds(matched)[0],
                precision_matched_only_upper=_bounds(matched)[1],
                clusters=rec.clusters,
                recall_design_effect=rec.design_effect,
                recall_effective_n=rec.effective_n if gt else None,
                precision_design_effect=1.0 if prec is None else prec.design_effect,
                precision_effective_n=None if prec is None or not prec.trials else prec.effective_n,
            )
        )
    return out


def class_metrics(dc: DistanceConfusion, alpha: float = 0.05, min_samples: int = 1,
                  precision: bool = True) -> list[ClassMetrics]:
    """Metrics per bin and class of the class-labeled matrices, then the pooled ones (bin ``pooled``).

    ``precision=False``: recall only (`class_metrics_at`), for readers of recall such as the breakdowns, whose
    cluster-aware precision intervals would cost twice what the recall ones do and never be shown.
    """
    rows: list[ClassMetrics] = []
    for k in range(dc.n_bins):
        rows += class_metrics_at(dc, [k], str(k), alpha, min_samples, precision)
    rows += class_metrics_at(dc, None, "pooled", alpha, min_samples, precision)
    return rows


def metrics_to_json(rows: list[ClassMetrics]) -> list[dict[str, Any]]:
    """Plain dicts for JSON output (``None`` stays ``null``)."""
    return [asdict(r) for r in rows]


def sampling_warnings(dc: DistanceConfusion, alpha: float = 0.05, min_clusters: int = 10) -> list[str]:
    """What the recall/precision intervals rest on, where it deserves a warning (sampling unit, unplaced FPs)."""
    out: list[str] = []
    rep = dc.report
    if dc.clusters is None:
        missing = rep.get("frames_without_episode", 0)
        why = (
            f"{missing} of {rep.get('frames', 0)} frame(s) carry no episode"
            if 0 < missing < rep.get("frames", 0)
            else "the input carries no episode information"
        )
        out.append(
            f"sampling unit: {why}, so recall and precision intervals treat every frame as an independent sample "
            "(plain Clopper-Pearson); with correlated frames they are too narrow"
        )
    for c, label in enumerate(dc.classes):
        rec = recall_of(dc, c, None, alpha)
        out += rec.warnings(f"recall '{label}' (pooled)", min_clusters)
        prec = precision_of(dc, c, None, alpha)
        if prec is not None:
            out += [w for w in prec.warnings(f"precision '{label}' (pooled)", min_clusters) if "INCONCLUSIVE" not in w]
    unplaced = rep.get("detections_unannotated_without_distance", 0)
    if unplaced and UNMATCHED_PER_BIN not in rep:
        out.append(
            f"{unplaced} detection(s) match no annotated object and have no distance (no confusion.ground_camera): "
            "precision counts them pooled only; per distance bin only the matched-only precision exists"
        )
    elif unplaced:
        out.append(
            f"{unplaced} unmatched detection(s) have no ground-plane distance (box bottom at or above the horizon, "
            "or beyond the bins): they count in the pooled precision only"
        )
    return out
