"""One-to-one matching: hand-built scenes and an exhaustive brute-force optimum on random data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject, iou_matrix, match_boxes, match_frame


def test_hand_built_scene_prefers_the_better_overlap():
    gt = np.array([[0, 0, 10, 10], [20, 0, 30, 10]], float)
    det = np.array([[21, 0, 31, 10], [1, 0, 11, 10], [100, 100, 110, 110]], float)
    m = match_boxes(det, gt, iou_threshold=0.5)
    assert m.gt_indices.tolist() == [0, 1]
    assert m.det_indices.tolist() == [1, 0]
    assert m.unmatched_detections.tolist() == [2]
    assert m.unmatched_ground_truth.tolist() == []
    assert m.detection_for_gt().tolist() == [1, 0]


def test_threshold_forbids_weak_pairs():
    gt = np.array([[0, 0, 10, 10]], float)
    det = np.array([[6, 0, 16, 10]], float)  # IoU 40/160 = 0.25
    assert len(match_boxes(det, gt, 0.5).gt_indices) == 0
    assert match_boxes(det, gt, 0.2).ious.tolist() == [0.25]


def test_class_aware_matching_respects_classes():
    gt = np.array([[0, 0, 10, 10]], float)
    det = np.array([[0, 0, 10, 10], [1, 0, 11, 10]], float)
    m = match_boxes(det, gt, 0.5, ["car", "ped"], ["ped"], class_aware=True)
    assert m.det_indices.tolist() == [1]
    agnostic = match_boxes(det, gt, 0.5, ["car", "ped"], ["ped"], class_aware=False)
    assert agnostic.det_indices.tolist() == [0]
    with pytest.raises(ValueError, match="class-aware"):
        match_boxes(det, gt, 0.5, class_aware=True)


def brute_force_best(ious: np.ndarray, thr: float) -> float:
    """Largest summed IoU over all one-to-one assignments of admissible pairs (exhaustive)."""
    n_det, n_gt = ious.shape
    best = 0.0
    for k in range(min(n_det, n_gt) + 1):
        for dets in itertools.permutations(range(n_det), k):
            for gts in itertools.combinations(range(n_gt), k):
                vals = [ious[d, g] for d, g in zip(dets, gts, strict=True)]
                if all(v >= thr and v > 0 for v in vals):
                    best = max(best, sum(vals))
    return best


def test_matching_is_optimal_against_exhaustive_search():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n_det, n_gt = rng.integers(0, 5), rng.integers(0, 5)
        centers = rng.uniform(0, 30, (n_det + n_gt, 2))
        sizes = rng.uniform(5, 15, (n_det + n_gt, 2))
        boxes = np.hstack([centers, centers + sizes])
        det, gt = boxes[:n_det], boxes[n_det:]
        m = match_boxes(det, gt, 0.3)
        ious = iou_matrix(det, gt)
        assert np.all(m.ious >= 0.3)
        assert len(set(m.det_indices.tolist())) == len(m.det_indices)
        assert len(set(m.gt_indices.tolist())) == len(m.gt_indices)
        assert m.ious.sum() == pytest.approx(brute_force_best(ious, 0.3), abs=1e-12)


def test_match_frame_uses_frame_boxes_and_classes():
    frame = Frame(
        stamp_ns=0,
        detections=(Detection(Box(0, 0, 10, 10), "ped", 0.9),),
        ground_truth=(GroundTruthObject(Box(0, 0, 10, 10), "car", 12.0),),
    )
    assert len(match_frame(frame, 0.5, class_aware=True).gt_indices) == 0
    assert len(match_frame(frame, 0.5, class_aware=False).gt_indices) == 1
