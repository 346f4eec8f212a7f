"""The vectorised batch matching by centre distance equals per-frame `match_centres` on random frames."""

from __future__ import annotations

import numpy as np

from perception_safety.core.matching import match_centres
from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion import ConfusionConfig
from perception_safety.evaluation.confusion.accumulate import match_batch
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper


def random_frames(n: int, seed: int) -> list[Frame]:
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        gts = tuple(
            GroundTruthObject(Box(x - 0.4, y - 0.4, x + 0.4, y + 0.4), "ped", float(np.hypot(x, y)), (x, y, 0.0))
            for x, y in rng.uniform(0, 8, (rng.integers(0, 6), 2))
        )
        dets = tuple(
            Detection(Box(x - 0.4, y - 0.4, x + 0.4, y + 0.4), "ped", 0.9, (x, y, 0.0))
            for x, y in rng.uniform(0, 8, (rng.integers(0, 6), 2))
        )
        frames.append(Frame(i, dets, gts))
    return frames


def test_batch_equals_per_frame_matching():
    cfg = ConfusionConfig(classes={"ped": ["ped"]}, matching="centre_distance", centre_distance_m=1.5)
    frames = random_frames(300, 7)
    batch = FrameBatch.from_frames(frames, ClassMapper(cfg))
    gt_match, _ = match_batch(batch, cfg.iou_threshold, False, "centre_distance", 1.5)
    expected = []
    d_off = 0
    for f in frames:
        m = match_centres(f.detection_boxes(), f.ground_truth_boxes(), 1.5)
        per = m.detection_for_gt()
        expected += [d_off + j if j >= 0 else -1 for j in per.tolist()]
        d_off += len(f.detections)
    assert np.count_nonzero(gt_match >= 0) == sum(e >= 0 for e in expected)
    # the same optimum: summed weights agree (ties may pick different, equally good pairs)
    assert abs(total_weight(batch, gt_match) - total_weight(batch, np.asarray(expected))) < 1e-9
    assert np.count_nonzero(gt_match >= 0) > 100  # the random scenes do match


def total_weight(batch: FrameBatch, match: np.ndarray) -> float:
    gi = np.flatnonzero(match >= 0)
    dc = (batch.det_boxes[match[gi], :2] + batch.det_boxes[match[gi], 2:]) / 2
    gc = (batch.gt_boxes[gi, :2] + batch.gt_boxes[gi, 2:]) / 2
    return float(np.sum(1 - np.hypot(*(dc - gc).T) / 1.5))
