"""3D object lists from bags: vision_msgs/Detection3DArray and Autoware DetectedObjects into frames, then
distance-binned confusion matrices by centre distance and the Markov verification on them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from rosbags.rosbag2 import Writer

from perception_safety.cli import main
from perception_safety.core.types import Box, Detection, GroundTruthObject
from perception_safety.evaluation.confusion import ConfusionConfig
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.io.bag import BagReadReport, BagTopics, read_frames
from perception_safety.io.objects3d import (
    AUTOWARE_OBJECTS_TYPE,
    DETECTIONS_3D_TYPE,
    detections_to_3d_msg,
    detections_to_autoware,
    footprint,
    ground_truth_to_3d_msg,
)
from perception_safety.io.typestore import ros2_typestore

TOPICS = BagTopics(image="", camera_info="", ego="", candidates="", monitor_results="")


def obj(x: float, y: float, cls: str = "pedestrian", track: str = "") -> GroundTruthObject:
    pos = (x, y, 0.9)
    return GroundTruthObject(footprint(pos, 0.6, 0.6, "gt"), cls, math.hypot(x, y), pos, track)


def det(x: float, y: float, cls: str = "pedestrian", score: float = 0.8) -> Detection:
    pos = (x, y, 0.9)
    return Detection(footprint(pos, 0.6, 0.6, "det"), cls, score, pos)


# Four instants: a pedestrian at 5 m found 0.3 m off; one at 15 m missed (the detection is 3 m away); a car at
# 25 m found; a frame with only a false pedestrian at 8 m (counted by the precision, not in a true column).
SCENES = [
    ([obj(5.0, 0.0, track="p1")], [det(5.3, 0.0)]),
    ([obj(15.0, 1.0, track="p2")], [det(15.0, 4.0)]),
    ([obj(25.0, -2.0, "car", "c1")], [det(25.5, -2.0, "car")]),
    ([], [det(8.0, 0.0)]),
]


def write_bag(path, detections_type: str, scenes=SCENES, bad_at: int | None = None) -> None:
    store = ros2_typestore()
    with Writer(path, version=9) as w:
        c_det = w.add_connection("/detections", detections_type, typestore=store)
        c_gt = w.add_connection("/ground_truth", DETECTIONS_3D_TYPE, typestore=store)
        for i, (gts, dets) in enumerate(scenes):
            t = 1_000_000_000 + i * 100_000_000
            msg = detections_to_3d_msg(tuple(dets), t) if detections_type == DETECTIONS_3D_TYPE \
                else detections_to_autoware(tuple(dets), t)
            if bad_at == i:
                first = msg.detections[0] if detections_type == DETECTIONS_3D_TYPE else None
                first.bbox.center.position.x = float("nan")
            w.write(c_det, t, store.serialize_cdr(msg, detections_type))
            w.write(c_gt, t, store.serialize_cdr(ground_truth_to_3d_msg(tuple(gts), t), DETECTIONS_3D_TYPE))


@pytest.mark.parametrize("kind", [DETECTIONS_3D_TYPE, AUTOWARE_OBJECTS_TYPE])
def test_3d_bags_read_into_frames_with_positions_and_ground_plane_distances(tmp_path, kind):
    write_bag(tmp_path / "b", kind)
    frames = list(read_frames(tmp_path / "b", TOPICS))
    assert len(frames) == 4
    d0, g0 = frames[0].detections[0], frames[0].ground_truth[0]
    assert d0.position == pytest.approx((5.3, 0.0, 0.9)) and d0.class_id == "pedestrian"
    assert d0.score == pytest.approx(0.8)
    assert d0.box.as_tuple() == pytest.approx((5.0, -0.3, 5.6, 0.3))  # footprint: x +- l/2, y +- w/2
    assert g0.track_id == "p1" and g0.distance == pytest.approx(5.0)
    assert frames[1].ground_truth[0].distance == pytest.approx(math.hypot(15.0, 1.0))  # hypot(x, y), z ignored
    assert frames[2].detections[0].class_id == "car"


def test_an_unreadable_3d_message_is_skipped_and_named(tmp_path):
    write_bag(tmp_path / "b", DETECTIONS_3D_TYPE, bad_at=1)
    report = BagReadReport()
    frames = list(read_frames(tmp_path / "b", TOPICS, report=report))
    assert len(frames) == 3
    (skip,) = report.skipped
    assert skip.topic == "/detections" and skip.index == 1 and "non-finite" in skip.reason


def test_centre_distance_confusion_counts_by_hand(tmp_path):
    write_bag(tmp_path / "b", DETECTIONS_3D_TYPE)
    cfg = ConfusionConfig(
        classes={"pedestrian": ["pedestrian"], "car": ["car"]}, matching="centre_distance", centre_distance_m=2.0,
        bin_edges=[0.0, 10.0, 20.0, 30.0],
    )
    acc = ConfusionAccumulator(cfg)
    acc.add_frames(read_frames(tmp_path / "b", TOPICS))
    cm = acc.result().class_cm[:, :, :2]  # [bin, pred, true] of the true pedestrian and car columns
    np.testing.assert_array_equal(cm[0], [[1, 0], [0, 0], [0, 0]])  # pedestrian at 5 m found 0.3 m off
    np.testing.assert_array_equal(cm[1], [[0, 0], [0, 0], [1, 0]])  # pedestrian at 15 m missed (3 m off)
    np.testing.assert_array_equal(cm[2], [[0, 0], [0, 1], [0, 0]])  # car at 25 m found
    # the unmatched detections are binned by the distance they carry: the false pedestrian at 8 m and the
    # 3 m-off one at hypot(15, 4) = 15.5 m count against precision in bins 0 and 1
    np.testing.assert_array_equal(acc.unannotated_by_bin[:, 0], [1, 1, 0, 0])


def test_iou_matching_of_the_same_footprints_differs(tmp_path):
    """The footprints of the 5 m pair overlap by IoU 1/3 < 0.5: IoU matching misses what centre distance finds."""
    write_bag(tmp_path / "b", DETECTIONS_3D_TYPE)
    cfg = ConfusionConfig(classes={"pedestrian": ["pedestrian"], "car": ["car"]}, bin_edges=[0.0, 10.0, 20.0, 30.0])
    acc = ConfusionAccumulator(cfg)
    acc.add_frames(read_frames(tmp_path / "b", TOPICS))
    assert acc.result().class_cm[0][0, 0] == 0


def test_3d_bag_confusion_then_markov_verification(tmp_path):
    """A 3D object bag gives distance-binned matrices (`confusion`) that `verify` model-checks."""
    kinds = [("empty", "ped", "car", "both", "both")[i % 5] for i in range(60)]
    found = [i % 4 != 0 for i in range(60)]  # the pedestrian is missed in every 4th frame
    scenes = []
    for i, kind in enumerate(kinds):
        gts, dets = [], []
        if kind in ("ped", "both"):
            gts.append(obj(4.0 + (i % 3), 0.0, track="p"))
            dets += [det(4.4 + (i % 3), 0.0)] if found[i] else []
        if kind in ("car", "both"):
            gts.append(obj(7.0, 3.0, "car", "c"))
            dets.append(det(7.2, 3.0, "car"))
        scenes.append((gts, dets))
    n_ped = sum(k in ("ped", "both") for k in kinds)
    n_found = sum(f for k, f in zip(kinds, found, strict=True) if k in ("ped", "both"))
    write_bag(tmp_path / "b", DETECTIONS_3D_TYPE, scenes)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "confusion:\n  classes: {ped: [pedestrian], obs: [car]}\n  matching: centre_distance\n"
        "  centre_distance_m: 1.0\n  bin_edges: [0, 10, 20]\nbags:\n"
        "  topics: {image: '', camera_info: '', ego: '', candidates: '', monitor_results: ''}\n",
        encoding="utf-8",
    )
    assert main(["confusion", str(tmp_path / "b"), "--config", str(cfg), "--out", str(tmp_path / "cm")]) == 0
    doc = json.loads((tmp_path / "cm" / "confusion.json").read_text())
    cm = np.asarray(doc["class_cm"])[0]  # bin [0, 10): [pred, true] over ped, obs, empty
    assert (cm[0, 0], cm[2, 0], cm[1, 1], cm[2, 2]) == (n_found, n_ped - n_found, 36, 12)
    out = tmp_path / "v"
    assert main(["verify", "--matrices", str(tmp_path / "cm" / "confusion.json"), "--max-speed", "1",
                 "--out", str(out)]) == 0
    rows = json.loads((out / "verification.json").read_text())["results"]
    stop = {r["variant"]: r for r in rows if r["true_env"] == "ped" and r["spec"] == "stop_at_k"}
    # with V = 1 the car stops exactly when it sees the pedestrian at its one look: P = P(ped | ped) in bin 0
    for variant in ("class", "class_by_distance"):
        assert stop[variant]["probability"] == pytest.approx(n_found / n_ped, abs=1e-9)
        assert stop[variant]["lower"] < n_found / n_ped < stop[variant]["upper"]


def test_footprint_refuses_nan_and_negative_sizes():
    with pytest.raises(ValueError, match="non-finite"):
        footprint((float("nan"), 0.0, 0.0), 1.0, 1.0, "x")
    with pytest.raises(ValueError, match="negative"):
        footprint((1.0, 0.0, 0.0), -1.0, 1.0, "x")
    assert footprint((1.0, 2.0, 0.0), 4.0, 2.0, "x") == Box(-1.0, 1.0, 3.0, 3.0)
