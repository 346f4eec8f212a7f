"""One-to-one matching of detections to ground truth (Hungarian assignment on IoU).

Pairs below the IoU threshold (or, when class-aware, of different classes) are
forbidden before the assignment, so the assignment maximises the summed IoU of
admissible pairs only; every metric of the package uses this one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.core.iou import iou_matrix
from perception_safety.core.types import Frame


@dataclass(frozen=True)
class Matching:
    """Result of matching: index pairs into the detection and ground-truth lists."""

    det_indices: np.ndarray
    gt_indices: np.ndarray
    ious: np.ndarray
    n_detections: int
    n_ground_truth: int

    @property
    def unmatched_detections(self) -> np.ndarray:
        """Detections matched to no ground truth (false positives / ghosts)."""
        mask = np.ones(self.n_detections, dtype=bool)
        mask[self.det_indices] = False
        return np.flatnonzero(mask)

    @property
    def unmatched_ground_truth(self) -> np.ndarray:
        """Ground-truth objects matched by no detection (misses)."""
        mask = np.ones(self.n_ground_truth, dtype=bool)
        mask[self.gt_indices] = False
        return np.flatnonzero(mask)

    def detection_for_gt(self) -> np.ndarray:
        """For each ground-truth index, the matched detection index or -1."""
        out = np.full(self.n_ground_truth, -1, dtype=np.int64)
        out[self.gt_indices] = self.det_indices
        return out


def match_boxes(
    det_boxes: np.ndarray,
    gt_boxes: np.ndarray,
    iou_threshold: float = 0.5,
    det_classes: Sequence[str] | None = None,
    gt_classes: Sequence[str] | None = None,
    class_aware: bool = False,
) -> Matching:
    """Match detections to ground truth one-to-one with IoU >= ``iou_threshold``.

    With ``class_aware`` a pair is admissible only when the classes are equal.
    """
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold must lie in [0, 1], got {iou_threshold}")
    ious = iou_matrix(det_boxes, gt_boxes)
    n_det, n_gt = ious.shape
    empty = np.zeros(0, dtype=np.int64)
    if n_det == 0 or n_gt == 0:
        return Matching(empty, empty, np.zeros(0), n_det, n_gt)
    # IoU 0 never makes a match, even at threshold 0.
    return _assign(ious, (ious >= iou_threshold) & (ious > 0.0), det_classes, gt_classes, class_aware)


def _assign(
    weights: np.ndarray,
    admissible: np.ndarray,
    det_classes: Sequence[str] | None,
    gt_classes: Sequence[str] | None,
    class_aware: bool,
) -> Matching:
    """The one-to-one matching of maximum summed weight over the admissible pairs (Hungarian assignment);
    ``Matching.ious`` holds the matched pairs' weights."""
    n_det, n_gt = weights.shape
    if class_aware:
        if det_classes is None or gt_classes is None:
            raise ValueError("class-aware matching needs det_classes and gt_classes")
        admissible = admissible & (
            np.asarray(det_classes, dtype=object)[:, None] == np.asarray(gt_classes, dtype=object)[None, :]
        )
    empty = np.zeros(0, dtype=np.int64)
    if not admissible.any():
        return Matching(empty, empty, np.zeros(0), n_det, n_gt)
    from scipy.optimize import linear_sum_assignment  # scipy.optimize costs ~0.5 s to import: load on first use

    rows, cols = linear_sum_assignment(np.where(admissible, weights, 0.0), maximize=True)
    keep = admissible[rows, cols]
    rows, cols = rows[keep].astype(np.int64), cols[keep].astype(np.int64)
    order = np.argsort(cols, kind="stable")
    rows, cols = rows[order], cols[order]
    return Matching(rows, cols, weights[rows, cols], n_det, n_gt)


def box_centres(boxes: np.ndarray) -> np.ndarray:
    """``(n, 2)`` centres of ``(n, 4)`` boxes (for 3D objects: the bird's-eye-view position)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.stack([(b[:, 0] + b[:, 2]) / 2.0, (b[:, 1] + b[:, 3]) / 2.0], axis=1)


def centre_weights(distance: np.ndarray, max_distance: float) -> np.ndarray:
    """Matching weight of a pair at centre distance ``d``: ``1 - d / max_distance`` in (0, 1] when admissible
    (``d <= max_distance``; a pair exactly at the threshold keeps a tiny positive weight), else 0."""
    d = np.asarray(distance, dtype=np.float64)
    return np.where(d <= max_distance, np.maximum(1.0 - d / max_distance, 1e-12), 0.0)


def match_centres(
    det_boxes: np.ndarray,
    gt_boxes: np.ndarray,
    max_distance: float = 2.0,
    det_classes: Sequence[str] | None = None,
    gt_classes: Sequence[str] | None = None,
    class_aware: bool = False,
) -> Matching:
    """Match detections to ground truth one-to-one by centre distance ``<= max_distance`` (nuScenes-style matching
    of 3D objects on the bird's-eye view), maximising the summed weight `centre_weights` (closer pairs first).

    ``Matching.ious`` holds those weights (1 = same centre) so that callers that rank matches keep working.
    """
    if not (np.isfinite(max_distance) and max_distance > 0.0):
        raise ValueError(f"max_distance must be a positive number, got {max_distance}")
    dc_xy, gc_xy = box_centres(det_boxes), box_centres(gt_boxes)
    n_det, n_gt = len(dc_xy), len(gc_xy)
    empty = np.zeros(0, dtype=np.int64)
    if n_det == 0 or n_gt == 0:
        return Matching(empty, empty, np.zeros(0), n_det, n_gt)
    dist = np.hypot(dc_xy[:, None, 0] - gc_xy[None, :, 0], dc_xy[:, None, 1] - gc_xy[None, :, 1])
    weights = centre_weights(dist, max_distance)
    return _assign(weights, weights > 0.0, det_classes, gt_classes, class_aware)


def match_frame(frame: Frame, iou_threshold: float = 0.5, class_aware: bool = False) -> Matching:
    """Match a `Frame`'s detections to its ground truth."""
    return match_boxes(
        frame.detection_boxes(),
        frame.ground_truth_boxes(),
        iou_threshold,
        [d.class_id for d in frame.detections],
        [g.class_id for g in frame.ground_truth],
        class_aware,
    )
