"""Subsets of a columnar `FrameBatch` without re-reading the frames: some frames, or some objects of every frame.

The evaluate pass flattens a bag's frames once and fills one accumulator per verdict, speed band and object-size
band from selections of that one batch (issue 27): a selection is the batch the selected frames (or boxes) would
have given, so its counts equal those of flattening the filtered frames (labels that map to no class are dropped
when the batch is built, so they are counted in the full batch only).
"""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.confusion.batch import FrameBatch


def _offsets(keep: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """New offsets of the kept items, frame by frame (every frame stays)."""
    kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    return kept_before[offsets]


def select_objects(batch: FrameBatch, gt_keep: np.ndarray, det_keep: np.ndarray) -> FrameBatch:
    """Every frame of ``batch`` with only the ground-truth objects and detections whose mask is True."""
    gt_keep = np.asarray(gt_keep, dtype=bool)
    det_keep = np.asarray(det_keep, dtype=bool)
    return FrameBatch(
        det_offsets=_offsets(det_keep, batch.det_offsets),
        det_boxes=batch.det_boxes[det_keep],
        det_classes=batch.det_classes[det_keep],
        gt_offsets=_offsets(gt_keep, batch.gt_offsets),
        gt_boxes=batch.gt_boxes[gt_keep],
        gt_classes=batch.gt_classes[gt_keep],
        gt_distances=batch.gt_distances[gt_keep],
        frame_stamps=batch.frame_stamps,
        gt_tracks=None if batch.gt_tracks is None else batch.gt_tracks[gt_keep],
        frame_episodes=batch.frame_episodes,
        det_distances=None if batch.det_distances is None else batch.det_distances[det_keep],
        det_scores=None if batch.det_scores is None else batch.det_scores[det_keep],
    )


def select_frames(batch: FrameBatch, keep: np.ndarray) -> FrameBatch:
    """The frames of ``batch`` whose mask is True, with all their boxes (frame order kept)."""
    keep = np.asarray(keep, dtype=bool)
    det_keep = np.repeat(keep, np.diff(batch.det_offsets))
    gt_keep = np.repeat(keep, np.diff(batch.gt_offsets))
    return FrameBatch(
        det_offsets=_offsets(det_keep, batch.det_offsets)[np.r_[True, keep]],
        det_boxes=batch.det_boxes[det_keep],
        det_classes=batch.det_classes[det_keep],
        gt_offsets=_offsets(gt_keep, batch.gt_offsets)[np.r_[True, keep]],
        gt_boxes=batch.gt_boxes[gt_keep],
        gt_classes=batch.gt_classes[gt_keep],
        gt_distances=batch.gt_distances[gt_keep],
        frame_stamps=None if batch.frame_stamps is None else batch.frame_stamps[keep],
        gt_tracks=None if batch.gt_tracks is None else batch.gt_tracks[gt_keep],
        frame_episodes=None if batch.frame_episodes is None else batch.frame_episodes[keep],
        det_distances=None if batch.det_distances is None else batch.det_distances[det_keep],
        det_scores=None if batch.det_scores is None else batch.det_scores[det_keep],
    )
