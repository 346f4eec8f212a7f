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


def test_a_box_without_a_finite_centre_leaves_the_other_frames_matched():
    """A NaN or infinite box is at no distance from anything (per-frame `match_centres` pairs it with nothing); it
    must not change the other frames' matching (before: it made the join's extent NaN and every pair vanished)."""
    cfg = ConfusionConfig(classes={"ped": ["ped"]}, matching="centre_distance", centre_distance_m=1.5)
    frames = random_frames(60, 11)
    clean = FrameBatch.from_frames(frames, ClassMapper(cfg))
    want, _ = match_batch(clean, cfg.iou_threshold, False, "centre_distance", 1.5)
    assert (want >= 0).sum() > 20
    for bad in (np.nan, np.inf, -np.inf):
        det, gt = clean.det_boxes.copy(), clean.gt_boxes.copy()
        det[0, 0], gt[-1, 2] = bad, bad
        batch = FrameBatch(clean.det_offsets, det, clean.det_classes, clean.gt_offsets, gt, clean.gt_classes,
                           clean.gt_distances)  # fmt: skip
        with np.errstate(invalid="ignore"):
            got, _ = match_batch(batch, cfg.iou_threshold, False, "centre_distance", 1.5)
        gt_frame = np.repeat(np.arange(clean.n_frames), np.diff(clean.gt_offsets))
        det_frame = np.repeat(np.arange(clean.n_frames), np.diff(clean.det_offsets))
        other = (gt_frame != det_frame[0]) & (gt_frame != gt_frame[-1])  # frames holding neither bad box
        assert other.sum() > 100
        np.testing.assert_array_equal(got[other], want[other])
        assert got[-1] == -1 and (got != 0).all()
