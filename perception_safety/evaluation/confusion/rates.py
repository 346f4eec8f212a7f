"""Recall and precision of one class over a set of bins, with the sampling unit taken into account.

Shared by the per-bin metrics (`metrics`) and the requirement verdicts, so a verdict quotes the figure the
report shows. With per-episode counts (`DistanceConfusion.clusters`) the interval is cluster-aware
(`perception_safety.evaluation.clustered`, Korn-Graubard with the beta-binomial profile); without them it is
exactly Clopper-Pearson.

Precision counts detections matched to no annotated object as false positives (DESIGN.md): ``tp / (matched
detections of the class + unmatched detections of the class)``. Per bin that needs the unmatched detections'
distance (`ground_distance`); without it, precision exists pooled only (`precision_of` returns None per bin)
and the matched-only figure ``tp / matched detections of the class`` (class confusion only) stays available
under its own name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception_safety.evaluation.clustered import ClusteredProportion, proportion
from perception_safety.evaluation.confusion.combine import UNMATCHED_BY_BIN
from perception_safety.evaluation.confusion.types import DistanceConfusion

UNMATCHED_BY_CLASS = "detections_unannotated_by_class"


def _cm(dc: DistanceConfusion, bins: Sequence[int] | None) -> np.ndarray:
    return dc.class_cm_pooled if bins is None else dc.class_cm[list(bins)].sum(axis=0)


def recall_of(dc: DistanceConfusion, c: int, bins: Sequence[int] | None, alpha: float = 0.05) -> ClusteredProportion:
    """Objects of class ``c`` detected as ``c`` over all of them, in ``bins`` (None = pooled)."""
    cm = _cm(dc, bins)
    per = None
    if dc.clusters is not None:
        col = dc.clusters.column(c, bins)
        per = (col[:, c], col.sum(axis=1))
    return proportion(int(cm[c, c]), int(cm[:, c].sum()), per, alpha)


def unmatched_of(dc: DistanceConfusion, c: int, bins: Sequence[int] | None) -> int | None:
    """Unmatched detections of class ``c`` in ``bins`` (None = all of them, pooled); None when unknown per bin."""
    label = dc.class_labels[c]
    if bins is None:
        by_class = dc.report.get(UNMATCHED_BY_CLASS)
        return int(by_class.get(label, 0)) if isinstance(by_class, dict) else None
    by_bin = dc.report.get(UNMATCHED_BY_BIN)
    if not isinstance(by_bin, dict) or label not in by_bin:
        return None
    return int(np.asarray(by_bin[label], dtype=np.int64)[list(bins)].sum())


def precision_of(
    dc: DistanceConfusion, c: int, bins: Sequence[int] | None, alpha: float = 0.05, matched_only: bool = False
) -> ClusteredProportion | None:
    """Precision of class ``c`` in ``bins`` (module docstring); None when unmatched detections cannot be placed."""
    cm = _cm(dc, bins)
    tp, matched = int(cm[c, c]), int(cm[c, :].sum())
    extra = 0 if matched_only else unmatched_of(dc, c, bins)
    if extra is None:
        return None
    per = None
    if dc.clusters is not None:
        row = dc.clusters.row(c, bins)
        um = 0 if matched_only else dc.clusters.unmatched_of(c, bins)
        per = (row[:, c], row.sum(axis=1) + um)
    return proportion(tp, matched + extra, per, alpha)
