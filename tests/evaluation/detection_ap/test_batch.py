"""AP records of a columnar batch equal the per-image records (`APRecords.add_image`, checked against pycocotools)
on random scenes that exercise every branch: crowded frames where boxes compete for one object, more detections
than the max-detections cut, unmapped labels, unknown detection distances and several episodes."""

from __future__ import annotations

import numpy as np

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.detection_ap import ap_results
from perception_safety.evaluation.detection_ap.batch import records_from_batch
from perception_safety.evaluation.detection_ap.frames import records_from_frames

LABELS = ("pedestrian", "car", "tree")  # tree maps to no class


def _scene(seed: int, n_frames: int = 60) -> list[Frame]:
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n_frames):
        gts, dets = [], []
        for _ in range(int(rng.integers(0, 6))):
            x, y, w, h = rng.uniform(0, 500), rng.uniform(0, 300), rng.uniform(10, 60), rng.uniform(10, 80)
            label = LABELS[int(rng.integers(0, 3))]
            gts.append(GroundTruthObject(Box(x, y, x + w, y + h), label, float(rng.uniform(1, 45))))
            for _ in range(int(rng.integers(0, 3))):  # 0-2 detections near it: competing boxes
                j = rng.normal(0, 0.1, 4) * [w, h, w, h]
                box = Box(x + j[0], y + j[1], x + w + abs(j[2]) + 1, y + h + abs(j[3]) + 1)
                lab = label if rng.random() < 0.9 else LABELS[int(rng.integers(0, 3))]
                dets.append(Detection(box, lab, float(np.round(rng.random(), 1))))  # ties in score
        if i % 17 == 0:  # past a cut of 5 detections per class
            for _ in range(8):
                x, y = rng.uniform(0, 500), rng.uniform(0, 300)
                dets.append(Detection(Box(x, y, x + 30, y + 40), "pedestrian", float(rng.random())))
        for _ in range(int(rng.integers(0, 3))):  # false detections anywhere
            x, y = rng.uniform(0, 500), rng.uniform(0, 300)
            dets.append(Detection(Box(x, y, x + 20, y + 30), LABELS[int(rng.integers(0, 2))], float(rng.random())))
        order = rng.permutation(len(dets))
        frames.append(Frame(i, tuple(dets[k] for k in order), tuple(gts), episode=f"ep{i % 4}" if i % 5 else ""))
    return frames


def _distances(frames: list[Frame]) -> dict[int, np.ndarray]:
    """A detection distance per frame, unknown (NaN) for some: from the box bottom, as a camera would give."""
    return {f.stamp_ns: np.array([np.nan if d.box.y_max < 60 else d.box.y_max / 8.0 for d in f.detections])
            for f in frames}  # fmt: skip


def test_batch_records_equal_the_per_image_records() -> None:
    cfg = ConfusionConfig(classes={"ped": ["pedestrian"], "car": ["car"]}, bin_edges=[0, 10, 20, 30, 50])
    for seed in range(5):
        frames = _scene(seed)
        dist = _distances(frames)
        per_image = records_from_frames(
            frames, cfg, lambda f: f.episode or "unit", lambda f, _b, d=dist: d[f.stamp_ns], max_detections=5
        )
        batch = FrameBatch.from_frames(frames, ClassMapper(cfg)).with_episode("unit")
        mapped = np.concatenate([dist[f.stamp_ns][[d.class_id != "tree" for d in f.detections]] for f in frames])
        columnar = records_from_batch(batch, cfg.class_names, cfg.bin_edges, mapped, 5)
        a, b = per_image.to_json(), columnar.to_json()
        assert sorted(a.pop("n_gt")) == sorted(b.pop("n_gt"))
        assert a == b
        assert ap_results(per_image, n_boot=20) == ap_results(columnar, n_boot=20)


def test_the_scenes_hold_competing_boxes_and_cut_detections() -> None:
    """The equality above is only meaningful if the scenes reach the exact (`match_image`) branch."""
    cfg = ConfusionConfig(classes={"ped": ["pedestrian"], "car": ["car"]}, bin_edges=[0, 10, 20, 30, 50])
    batch = FrameBatch.from_frames(_scene(0), ClassMapper(cfg))
    from perception_safety.core.iou import iou_matrix

    competing = 0
    for f in range(batch.n_frames):
        d0, d1, g0, g1 = batch.det_offsets[f], batch.det_offsets[f + 1], batch.gt_offsets[f], batch.gt_offsets[f + 1]
        same = batch.det_classes[d0:d1, None] == batch.gt_classes[None, g0:g1]
        competing += int((((iou_matrix(batch.det_boxes[d0:d1], batch.gt_boxes[g0:g1]) >= 0.5) & same).sum(0) > 1).sum())
    assert competing >= 5
    assert max(np.bincount(batch.det_classes[batch.det_offsets[0]:batch.det_offsets[1]])) > 5
