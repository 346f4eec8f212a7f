"""COCO-style matching of one image's detections of one class (the rule of the COCO detection evaluation).

Detections are taken in descending score (stable for ties) and cut to the ``max_detections`` best. For each
IoU threshold ``t``, each detection in turn takes the still-unmatched ground truth of highest IoU ``>= t``
(ties: the later one), preferring regular ground truth; only when no regular one qualifies may it take an
*ignored* one (a crowd region, or an object outside the evaluated distance range). A crowd region can absorb
any number of detections and its overlap is intersection over the *detection's* area. A detection matched to
ignored ground truth, and an unmatched detection whose own distance lies outside the range, count neither as
true nor as false positive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perception_safety.core.iou import box_areas

IOU_THRESHOLDS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
"""0.50:0.05:0.95, computed exactly as the COCO evaluation defines the grid (AP50 = index 0, AP75 = index 5)."""
RECALL_POINTS = np.linspace(0.0, 1.0, int(np.round((1.0 - 0.0) / 0.01)) + 1, endpoint=True)
"""The 101 recall points of COCO's interpolated precision."""
AP50, AP75 = 0, 5


def crowd_iou(det: np.ndarray, gt: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """``(D, G)`` overlap: IoU, or for crowd columns intersection over the detection's area."""
    det = np.asarray(det, dtype=np.float64).reshape(-1, 4)
    gt = np.asarray(gt, dtype=np.float64).reshape(-1, 4)
    ix = np.minimum(det[:, None, 2], gt[None, :, 2]) - np.maximum(det[:, None, 0], gt[None, :, 0])
    iy = np.minimum(det[:, None, 3], gt[None, :, 3]) - np.maximum(det[:, None, 1], gt[None, :, 1])
    inter = np.clip(ix, 0.0, None) * np.clip(iy, 0.0, None)
    area_d = box_areas(det)[:, None]
    denom = np.where(np.asarray(crowd, dtype=bool)[None, :], area_d, area_d + box_areas(gt)[None, :] - inter)
    out = np.zeros_like(inter)
    np.divide(inter, denom, out=out, where=denom > 0)
    return out


@dataclass(frozen=True)
class ImageMatch:
    """The kept detections (indices into the input, best first) and, per range and threshold, TP / FP flags."""

    kept: np.ndarray
    """``(K,)`` indices of the detections kept (descending score, at most ``max_detections``)."""
    tp: np.ndarray
    """``(R, T, K)`` bool: matched to regular ground truth in range ``R`` at threshold ``T``."""
    fp: np.ndarray
    """``(R, T, K)`` bool: unmatched and not ignored."""
    n_gt: np.ndarray
    """``(R,)`` regular (not ignored) ground-truth objects per range: the recall denominators."""


def _last_argmax(values: np.ndarray) -> np.ndarray:
    """Per row, the index of the last maximum (COCO's rule keeps the later of equal overlaps)."""
    return values.shape[1] - 1 - np.argmax(values[:, ::-1], axis=1)


def match_image(
    det_boxes: np.ndarray,
    det_scores: np.ndarray,
    gt_boxes: np.ndarray,
    gt_ignore: np.ndarray,
    gt_crowd: np.ndarray,
    det_outside: np.ndarray | None = None,
    thresholds: np.ndarray = IOU_THRESHOLDS,
    max_detections: int = 100,
) -> ImageMatch:
    """Match one image's detections of one class to its ground truth at every threshold (module docstring).

    ``gt_ignore`` (``(G,)`` or ``(R, G)``, one row per evaluated range) marks ignored ground truth (crowd
    regions must be ignored too); ``det_outside`` (``(D,)`` or ``(R, D)``) marks detections whose own distance
    is outside the range (ignored when unmatched). All ranges share one pass over the detections.
    """
    scores = np.asarray(det_scores, dtype=np.float64).reshape(-1)
    kept = np.argsort(-scores, kind="mergesort")[:max_detections]
    crowd = np.asarray(gt_crowd, dtype=bool).reshape(-1)
    n_g = len(crowd)
    ignore = np.asarray(gt_ignore, dtype=bool)
    ignore = (ignore[None, :] if ignore.ndim == 1 else ignore) | crowd[None, :]
    n_r, n_t, n_k = len(ignore), len(thresholds), len(kept)
    rows_ignore = np.repeat(ignore, n_t, axis=0)  # (R*T, G): row r*T + t
    limit = np.tile(np.minimum(np.asarray(thresholds, dtype=np.float64), 1 - 1e-10), n_r)[:, None]
    matched = np.zeros((n_r * n_t, n_k), dtype=bool)
    ignored = np.zeros((n_r * n_t, n_k), dtype=bool)
    if n_k and n_g:
        gts = np.asarray(gt_boxes, dtype=np.float64).reshape(-1, 4)
        overlap = crowd_iou(np.asarray(det_boxes, dtype=np.float64).reshape(-1, 4)[kept], gts, crowd)
        taken = np.zeros((n_r * n_t, n_g), dtype=bool)
        rows = np.arange(n_r * n_t)
        for k in np.flatnonzero((overlap >= limit.min()).any(axis=1)):
            row = overlap[k][None, :]
            ok = (row >= limit) & (~taken | crowd[None, :])
            if not ok.any():
                continue
            regular = ok & ~rows_ignore
            pick_from = np.where(regular.any(axis=1)[:, None], regular, ok)  # ignored ones only as a fallback
            best = _last_argmax(np.where(pick_from, row, -1.0))
            hit = pick_from.any(axis=1)
            taken[rows[hit], best[hit]] = True
            matched[hit, k] = True
            ignored[hit, k] = rows_ignore[rows[hit], best[hit]]
    if det_outside is not None:
        outside = np.asarray(det_outside, dtype=bool)
        outside = (outside[None, :] if outside.ndim == 1 else outside)[:, kept]
        ignored |= ~matched & np.repeat(outside, n_t, axis=0)
    shape = (n_r, n_t, n_k)
    tp = (matched & ~ignored).reshape(shape)
    fp = (~matched & ~ignored).reshape(shape)
    return ImageMatch(kept, tp, fp, (~ignore).sum(axis=1))
