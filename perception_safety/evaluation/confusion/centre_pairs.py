"""Candidate pairs and weights for matching by centre distance (3D object lists: bird's-eye-view centres).

The counterpart of `matching.candidate_pairs` for ``confusion.matching: centre_distance``: a sorted window
join on the centre's x within ``max_distance`` (a superset of the admissible pairs), then the exact distance.
"""

from __future__ import annotations

import numpy as np

from perception_safety.core.matching import box_centres, centre_weights
from perception_safety.evaluation.confusion.batch import FrameBatch


def centre_candidate_pairs(batch: FrameBatch, max_distance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(detection index, ground-truth index, weight)`` of the same frame with centres within ``max_distance``."""
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    empty = np.zeros(0, dtype=np.int64)
    if n_det == 0 or n_gt == 0:
        return empty, empty, np.zeros(0)
    det_frame = np.repeat(np.arange(batch.n_frames, dtype=np.int64), np.diff(batch.det_offsets))
    gt_frame = np.repeat(np.arange(batch.n_frames, dtype=np.int64), np.diff(batch.gt_offsets))
    dc, gc = box_centres(batch.det_boxes), box_centres(batch.gt_boxes)
    # A centre with a NaN or infinite coordinate is at no finite distance (weight 0): it takes part in no pair, and
    # only finite centres set the join's extent (one such box would make every key NaN or infinite).
    d_ok, g_ok = np.isfinite(dc).all(axis=1), np.isfinite(gc).all(axis=1)
    if not (d_ok.all() and g_ok.all()):
        d_idx, g_idx = np.flatnonzero(d_ok), np.flatnonzero(g_ok)
        if len(d_idx) == 0 or len(g_idx) == 0:
            return empty, empty, np.zeros(0)
        dc, gc, det_frame, gt_frame = dc[d_idx], gc[g_idx], det_frame[d_idx], gt_frame[g_idx]
        di, gi, w = _window_pairs(dc, gc, det_frame, gt_frame, max_distance)
        return d_idx[di], g_idx[gi], w
    return _window_pairs(dc, gc, det_frame, gt_frame, max_distance)


def _window_pairs(
    dc: np.ndarray, gc: np.ndarray, det_frame: np.ndarray, gt_frame: np.ndarray, max_distance: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`centre_candidate_pairs` of finite centres (indices into ``dc`` / ``gc``, detections in order)."""
    empty = np.zeros(0, dtype=np.int64)
    n_det = len(dc)
    lo_x = min(float(dc[:, 0].min()), float(gc[:, 0].min())) - max_distance - 1.0
    stride = max(float(dc[:, 0].max()), float(gc[:, 0].max())) - lo_x + 2.0 * max_distance + 2.0
    key_g = gt_frame * stride + (gc[:, 0] - lo_x)
    order = np.argsort(key_g, kind="stable")
    sorted_g = key_g[order]
    base = det_frame * stride + (dc[:, 0] - lo_x)
    margin = 1e-9 * (np.abs(base) + 1.0)
    first = np.searchsorted(sorted_g, base - max_distance - margin, side="left")
    last = np.searchsorted(sorted_g, base + max_distance + margin, side="right")
    counts = np.maximum(last - first, 0)
    total = int(counts.sum())
    if total == 0:
        return empty, empty, np.zeros(0)
    di = np.repeat(np.arange(n_det, dtype=np.int64), counts)
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    gi = order[pos]
    same = det_frame[di] == gt_frame[gi]
    di, gi = di[same], gi[same]
    dist = np.hypot(dc[di, 0] - gc[gi, 0], dc[di, 1] - gc[gi, 1])
    return di, gi, centre_weights(dist, max_distance)
