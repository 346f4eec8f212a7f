"""Emergency-braking rule: stop when a watched box overlaps the warning region (paper Section III-B)."""

from __future__ import annotations

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.monitors.config import StopRegionConfig
from perception_safety.monitors.stop_region import StopRegionMonitor, should_stop

# warning region of the paper's code on its 1280x720 camera: x in [274, 1007], y in [468, 720]
CFG = StopRegionConfig()
PAPER = (1280, 720)
CAMERA = Intrinsics.from_fov(*PAPER, 90.0)
RECT = (274.0, 468.0, 1007.0, 720.0)


def test_overlap_with_warning_region_stops() -> None:
    assert should_stop([Box(1000, 400, 1040, 480)], ["person"], [0.9], CFG, PAPER)  # 7 x 12 px inside
    assert not should_stop([Box(1008, 400, 1040, 480)], ["person"], [0.9], CFG, PAPER)  # right of the region
    assert not should_stop([Box(1007, 400, 1040, 480)], ["person"], [0.9], CFG, PAPER)  # touching edge, zero area
    assert not should_stop([Box(500, 300, 600, 467)], ["person"], [0.9], CFG, PAPER)  # above it


def test_only_watched_classes_and_scores_count() -> None:
    inside = Box(500, 500, 560, 600)
    assert not should_stop([inside], ["car"], [0.9], CFG, PAPER)
    cfg = StopRegionConfig(min_score=0.5)
    assert not should_stop([inside], ["person"], [0.4], cfg, PAPER)
    assert should_stop([inside], ["person"], [0.5], cfg, PAPER)


def test_min_overlap() -> None:
    cfg = StopRegionConfig(min_overlap_px=100.0)
    # x 1002..1007 (5 px) times y 700..720 (20 px) = 100 px^2: not more than 100
    assert not should_stop([Box(1002, 700, 1040, 740)], ["person"], [1.0], cfg, PAPER)
    assert should_stop([Box(1000, 700, 1040, 740)], ["person"], [1.0], cfg, PAPER)  # 7 x 20 = 140


def test_monitor_reads_detections_or_ground_truth() -> None:
    ped_box = Box(600, 500, 640, 600)
    frame = Frame(0, detections=(), ground_truth=(GroundTruthObject(ped_box, "person", 10.0),), camera=CAMERA)
    assert not StopRegionMonitor(CFG).update(frame).alarm
    gt_rule = StopRegionMonitor(StopRegionConfig(source="ground_truth"))
    res = gt_rule.update(frame)
    assert res.alarm and res.values["boxes_in_region"] == 1.0
    seen = Frame(0, detections=(Detection(ped_box, "person", 0.8),), camera=CAMERA)
    assert StopRegionMonitor(CFG).update(seen).alarm


def test_bbsl_form_agrees_with_the_plain_rule() -> None:
    from perception_safety.bbsl.spec import load_spec
    from perception_safety.monitors.stop_region import STOP_REGION_BBSL, bbsl_bindings, overlapping

    spec = load_spec(STOP_REGION_BBSL, bbsl_bindings(CFG, PAPER), image_size=(1280, 720))
    rng = np.random.default_rng(0)
    xy = rng.uniform([0, 0], [1280, 720], size=(2000, 2))
    wh = rng.uniform(1, 300, size=(2000, 2))
    boxes = np.concatenate([xy, xy + wh], axis=1)  # continuous coordinates: edge contact has probability 0
    cases = spec.cases_for_boxes(boxes)
    stop_col = spec.case_names.index("stop")
    plain = np.zeros(len(boxes), dtype=bool)
    plain[overlapping(boxes, ["person"] * len(boxes), np.ones(len(boxes)), CFG, RECT)] = True
    assert 0.1 < plain.mean() < 0.9
    assert np.array_equal(cases[:, stop_col], plain)
    assert np.array_equal(cases[:, spec.case_names.index("NOT stop")], ~plain)
    # the one difference: BBSL overlap is closed, so an edge-touching box stops there only
    edge = np.array([[1007.0, 400.0, 1040.0, 480.0]])
    assert cases.shape[1] == 2 and spec.cases_for_boxes(edge)[0, stop_col]
    assert overlapping(edge, ["person"], [1.0], CFG, RECT).size == 0
