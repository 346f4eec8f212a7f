"""Conversion between rclpy messages, raw CDR and core types; monitor results through DiagnosticStatus."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rclpy.serialization import serialize_message

from perception_safety.core.types import Box, Detection, EgoState, GroundTruthObject
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.ros import convert


def _roundtrip(msg, msgtype, topic="/t"):
    return convert.decode_cdr(serialize_message(msg), msgtype, topic)


def test_image_rgb_and_bgr_come_back_as_rgb():
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    back = convert.image_from_msg(_roundtrip(convert.image_msg(rgb, 7), "sensor_msgs/msg/Image"))
    assert np.array_equal(back, rgb)
    bgr_msg = convert.image_msg(rgb[:, :, ::-1], 7, encoding="bgr8")
    assert np.array_equal(convert.image_from_msg(_roundtrip(bgr_msg, "sensor_msgs/msg/Image")), rgb)


def test_raw_rgb8_image_is_a_view_of_the_received_bytes():
    """The node's image path copies no frame: the raw CDR bytes (what a ``raw=True`` subscription hands over)
    -> rosbags decode -> HxWx3 array is a view of those bytes; only bgr8 (channel flip) and a padded row step make
    one RGB copy."""
    rgb = np.random.default_rng(3).integers(0, 256, size=(6, 7, 3), dtype=np.uint8)
    raw = bytes(serialize_message(convert.image_msg(rgb, 7)))
    img = convert.image_from_msg(convert.decode_cdr(raw, "sensor_msgs/msg/Image", "/cam"))
    assert np.array_equal(img, rgb) and img.flags.c_contiguous
    assert np.shares_memory(img, np.frombuffer(raw, np.uint8))
    bgr = bytes(serialize_message(convert.image_msg(rgb[:, :, ::-1], 7, encoding="bgr8")))
    img = convert.image_from_msg(convert.decode_cdr(bgr, "sensor_msgs/msg/Image", "/cam"))
    assert np.array_equal(img, rgb) and not np.shares_memory(img, np.frombuffer(bgr, np.uint8))


def test_image_errors_name_topic_and_problem():
    img = convert.image_msg(np.zeros((4, 5, 3), np.uint8), 1)
    img.encoding = "yuv422"
    with pytest.raises(convert.MessageError, match=r"/cam: .*unsupported encoding 'yuv422'"):
        convert.image_from_msg(_roundtrip(img, "sensor_msgs/msg/Image"), "/cam")
    img = convert.image_msg(np.zeros((4, 5, 3), np.uint8), 1)
    img.data = bytes(59)
    with pytest.raises(convert.MessageError, match=r"/cam: .*data length 59"):
        convert.image_from_msg(_roundtrip(img, "sensor_msgs/msg/Image"), "/cam")
    with pytest.raises(convert.MessageError, match="/cam: cannot deserialize"):
        convert.decode_cdr(b"\x00\x01\x00\x00\x05", "sensor_msgs/msg/Image", "/cam")


def test_detections_and_ground_truth_roundtrip():
    dets = (Detection(Box(10.0, 20.0, 30.0, 60.0), "car", 0.75), Detection(Box(0.5, 1.5, 2.5, 3.5), "person", 0.5))
    msg = _roundtrip(convert.detection_array_msg(dets, 123), "vision_msgs/msg/Detection2DArray")
    assert convert.stamp_to_ns(msg.header.stamp) == 123
    assert convert.detections_from_msg(msg) == dets
    gt = (GroundTruthObject.at_position(Box(1, 2, 3, 4), "pedestrian", (3.0, 4.0, 0.0), "9"),)
    back = convert.ground_truth_from_msg(_roundtrip(convert.ground_truth_array_msg(gt, 5),
                                                    "vision_msgs/msg/Detection2DArray"))
    assert back[0].distance == 5.0 and back[0].track_id == "9" and back[0].class_id == "pedestrian"


def test_nan_box_is_a_message_error():
    msg = convert.detection_array_msg([Detection(Box(1, 1, 2, 2), "car", 0.5)], 1)
    msg.detections[0].bbox.size_x = float("nan")
    with pytest.raises(convert.MessageError, match=r"/dets: detections\[0\]: non-finite"):
        convert.detections_from_msg(_roundtrip(msg, "vision_msgs/msg/Detection2DArray"), "/dets")


def test_odometry_to_ego():
    ego = EgoState(x=1.5, y=-2.0, yaw=0.7, speed=8.0)
    back = convert.ego_from_msg(_roundtrip(convert.odometry_msg(ego, 3), "nav_msgs/msg/Odometry"))
    assert (back.x, back.y, back.speed) == (1.5, -2.0, 8.0)
    assert math.isclose(back.yaw, 0.7, abs_tol=1e-12)


def test_stamp_split_handles_large_and_boundary_values():
    for ns in (0, 999_999_999, 1_000_000_000, 1_700_000_000_123_456_789):
        sec, nsec = convert.ns_to_sec_nanosec(ns)
        assert sec * 1_000_000_000 + nsec == ns and 0 <= nsec < 1_000_000_000


def test_monitor_result_survives_diagnostic_status_exactly():
    r = MonitorResult("contrast", True, Level.ERROR, ("row_variance contrast 12.3 below threshold 1580",),
                      {"statistic": 0.1 + 0.2, "threshold": 1580.0, "tiny": 5e-324})
    back = convert.result_from_status(_roundtrip(convert.result_status(r, "node: "),
                                                 "diagnostic_msgs/msg/DiagnosticStatus"), "node: ")
    assert back == r
    assert back.values["statistic"] == 0.30000000000000004
