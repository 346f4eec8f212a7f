"""Selections of a columnar batch count exactly what flattening the filtered frames counts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.subset import select_frames, select_objects

CONFIG = ConfusionConfig(classes={"ped": ["pedestrian"], "car": ["car"]}, bin_edges=[0, 20, 40, 60])


def _frames(n: int, seed: int) -> list[Frame]:
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        gts, dets = [], []
        for k in range(int(rng.integers(0, 4))):
            cls = ("pedestrian", "car", "bicycle")[int(rng.integers(0, 3))]
            x, y, h = rng.uniform(0, 1000), rng.uniform(0, 500), rng.uniform(30, 150)
            box = Box(x, y, x + h / 2, y + h)
            gts.append(GroundTruthObject(box, cls, float(rng.uniform(1, 70)), track_id=f"t{k}"))
            if rng.uniform() < 0.7:
                j = rng.uniform(-2, 2, 4)
                dets.append(Detection(Box(x + j[0], y + j[1], x + h / 2 + j[2], y + h + j[3]), cls, 0.8))
        if rng.uniform() < 0.3:
            dets.append(Detection(Box(5, 5, 40, 90), "car", 0.6))  # a ghost
        frames.append(Frame(10**9 + i * 10**8, tuple(dets), tuple(gts)))
    return frames


def _counts(frames: list[Frame]) -> tuple:
    r = ConfusionAccumulator(CONFIG).add_frames(frames).result()
    return r.class_cm, r.prop_cm, r.class_cm_pooled, r.prop_cm_pooled


def _same(a: tuple, b: tuple) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_select_frames_equals_the_filtered_frames():
    frames = _frames(300, 1)
    batch = FrameBatch.from_frames(frames, ClassMapper(CONFIG))
    keep = np.random.default_rng(2).uniform(size=len(frames)) < 0.4
    got = ConfusionAccumulator(CONFIG).add_batch(select_frames(batch, keep)).result()
    _same((got.class_cm, got.prop_cm, got.class_cm_pooled, got.prop_cm_pooled),
          _counts([f for f, k in zip(frames, keep, strict=True) if k]))
    assert got.report["frames"] == int(keep.sum())


def test_select_objects_equals_frames_keeping_only_those_boxes():
    """Boxes taller than 60 px only: every frame stays (its empty cells count), other boxes are gone."""
    frames = _frames(300, 3)
    batch = FrameBatch.from_frames(frames, ClassMapper(CONFIG))
    tall = [
        replace(
            f,
            ground_truth=tuple(g for g in f.ground_truth if g.box.y_max - g.box.y_min > 60),
            detections=tuple(d for d in f.detections if d.box.y_max - d.box.y_min > 60),
        )
        for f in frames
    ]
    gt_h = batch.gt_boxes[:, 3] - batch.gt_boxes[:, 1]
    det_h = batch.det_boxes[:, 3] - batch.det_boxes[:, 1]
    got = ConfusionAccumulator(CONFIG).add_batch(select_objects(batch, gt_h > 60, det_h > 60)).result()
    _same((got.class_cm, got.prop_cm, got.class_cm_pooled, got.prop_cm_pooled), _counts(tall))
    assert got.report["frames"] == len(frames)
    assert got.report["detections"] == sum(
        1 for f in tall for d in f.detections if d.class_id in ("pedestrian", "car")
    )
