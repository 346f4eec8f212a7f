"""3D object lists on hostile messages: a message with a non-finite or negative size, an empty class, an Autoware
label outside 0..11, a probability outside [0, 1] or positions in a fixed frame is skipped and named (bag, topic,
index, reason), its frame left out, never read as a silently clamped or renamed object; a detections topic of an
unrelated type is an error naming the topic."""

from __future__ import annotations

import pytest
from rosbags.rosbag2 import Writer

from perception_safety.io.bag import BagReadReport, read_frames
from perception_safety.io.bag.layout import BagError
from perception_safety.io.objects3d import (
    AUTOWARE_OBJECTS_TYPE,
    DETECTIONS_3D_TYPE,
    detections_to_3d_msg,
    detections_to_autoware,
    ground_truth_to_3d_msg,
)
from perception_safety.io.typestore import ros2_typestore
from tests.io.test_objects3d import SCENES, TOPICS

NAN = float("nan")


def _autoware_label(m, v):
    m.objects[0].classification[0].label = v


def _existence(m, v):
    m.objects[0].existence_probability = v


def _class_prob(m, v):
    m.objects[0].classification[0].probability = v


def _no_class(m, v):
    m.objects[0].classification = []


def _size(m, v):
    if hasattr(m, "objects"):
        m.objects[0].shape.dimensions.y = v
    else:
        m.detections[0].bbox.size.y = v


def _score(m, v):
    m.detections[0].results[0].hypothesis.score = v


def _class_id(m, v):
    m.detections[0].results[0].hypothesis.class_id = v


def _frame(m, v):
    m.header.frame_id = v


def _bag(path, kind, mutate, value):
    """SCENES with message 1 of the detections topic damaged by ``mutate``."""
    store = ros2_typestore()
    with Writer(path, version=9) as w:
        c_det = w.add_connection("/detections", kind, typestore=store)
        c_gt = w.add_connection("/ground_truth", DETECTIONS_3D_TYPE, typestore=store)
        for i, (gts, dets) in enumerate(SCENES):
            t = 1_000_000_000 + i * 100_000_000
            msg = detections_to_3d_msg(tuple(dets), t) if kind == DETECTIONS_3D_TYPE \
                else detections_to_autoware(tuple(dets), t)
            if i == 1:
                mutate(msg, value)
            w.write(c_det, t, store.serialize_cdr(msg, kind))
            w.write(c_gt, t, store.serialize_cdr(ground_truth_to_3d_msg(tuple(gts), t), DETECTIONS_3D_TYPE))


@pytest.mark.parametrize(("kind", "mutate", "value", "reason"), [
    (AUTOWARE_OBJECTS_TYPE, _autoware_label, 12, "Autoware label 12 outside 0..11"),
    (AUTOWARE_OBJECTS_TYPE, _autoware_label, 255, "Autoware label 255 outside 0..11"),
    (AUTOWARE_OBJECTS_TYPE, _existence, 1.5, "existence_probability 1.5 outside [0, 1]"),
    (AUTOWARE_OBJECTS_TYPE, _existence, -0.5, "existence_probability -0.5 outside [0, 1]"),
    (AUTOWARE_OBJECTS_TYPE, _existence, NAN, "existence_probability nan"),
    (AUTOWARE_OBJECTS_TYPE, _class_prob, NAN, "classification probability nan"),
    (AUTOWARE_OBJECTS_TYPE, _no_class, None, "no classification present"),
    (AUTOWARE_OBJECTS_TYPE, _size, -1.0, "negative size"),
    (AUTOWARE_OBJECTS_TYPE, _frame, "map", "header.frame_id 'map' is a fixed frame"),
    (DETECTIONS_3D_TYPE, _size, NAN, "non-finite position or size"),
    (DETECTIONS_3D_TYPE, _size, -2.0, "negative size"),
    (DETECTIONS_3D_TYPE, _score, NAN, "non-finite score"),
    (DETECTIONS_3D_TYPE, _class_id, " ", "empty class_id"),
    (DETECTIONS_3D_TYPE, _frame, "/odom", "header.frame_id 'odom' is a fixed frame"),
])
def test_a_damaged_3d_message_is_skipped_and_named(tmp_path, kind, mutate, value, reason):
    _bag(tmp_path / "b", kind, mutate, value)
    report = BagReadReport()
    frames = list(read_frames(tmp_path / "b", TOPICS, report=report))
    assert len(frames) == len(SCENES) - 1  # the damaged instant is left out, not read with no detection
    (skip,) = report.skipped
    assert skip.topic == "/detections" and skip.index == 1 and reason in skip.reason
    assert all(d.class_id in ("pedestrian", "car") and 0.0 <= d.score <= 1.0 for f in frames for d in f.detections)


def test_a_detections_topic_of_an_unrelated_type_names_the_topic(tmp_path):
    store = ros2_typestore()
    with Writer(tmp_path / "b", version=9) as w:
        c_det = w.add_connection("/detections", "std_msgs/msg/String", typestore=store)
        c_gt = w.add_connection("/ground_truth", DETECTIONS_3D_TYPE, typestore=store)
        w.write(c_det, 10**9, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"),
                                                  "std_msgs/msg/String"))
        w.write(c_gt, 10**9, store.serialize_cdr(ground_truth_to_3d_msg((), 10**9), DETECTIONS_3D_TYPE))
    with pytest.raises(BagError, match="topic /detections has type std_msgs/msg/String"):
        list(read_frames(tmp_path / "b", TOPICS))
