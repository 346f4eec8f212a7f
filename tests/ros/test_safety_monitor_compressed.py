"""``safety_monitor`` on CompressedImage + CameraInfo: decoded once; corrupt JPEG, size mismatch: reported skips."""

from __future__ import annotations

import math
import signal
import time

import numpy as np
import pytest

from .test_safety_monitor_node import H, W, _params, _row_variance, _values

pytestmark = pytest.mark.ros

CAM, INFO, DETS, GT = "/ctest/cam", "/ctest/camera_info", "/ctest/dets", "/ctest/gt"


@pytest.fixture(scope="module")
def compressed_monitor(ros_client, ros_tools, tmp_path_factory):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import CameraInfo, CompressedImage, Image
    from vision_msgs.msg import Detection2DArray
    from visualization_msgs.msg import ImageMarker

    tmp = tmp_path_factory.mktemp("compressed")
    params = _params(tmp, ros_tools, "cmonitor", image_transport="compressed",
                     topics={"image": CAM, "camera_info": INFO, "detections": DETS},
                     overlay={"enabled": True, "max_rate_hz": 2.0, "ground_truth": GT})
    proc = ros_tools.NodeProcess("safety_monitor", "cmonitor", params, None, tmp)
    pubs = {"image": ros_client.publisher(CompressedImage, CAM + "/compressed"),
            "info": ros_client.publisher(CameraInfo, INFO),
            "dets": ros_client.publisher(Detection2DArray, DETS),
            "gt": ros_client.publisher(Detection2DArray, GT)}
    out = {"results": ros_client.collect(DiagnosticArray, "/cmonitor/monitor_results"),
           "diag": ros_client.collect(DiagnosticArray, "/diagnostics"),
           "overlay": ros_client.collect(Image, "/cmonitor/overlay"),
           "markers": ros_client.collect(ImageMarker, "/cmonitor/overlay/markers")}
    ok = ros_tools.wait_until(lambda: not proc.alive() or (all(p.get_subscription_count() > 0 for p in pubs.values())
                              and ros_client.node.count_publishers("/cmonitor/monitor_results") > 0), timeout=30)
    assert ok and proc.alive(), proc.output()
    yield proc, pubs, out
    assert proc.alive(), proc.output()
    assert proc.stop(signal.SIGINT) == 0, proc.output()


def _compressed(payload: bytes, stamp: int):
    from sensor_msgs.msg import CompressedImage

    from perception_safety.ros import convert

    return CompressedImage(header=convert.header_msg(stamp, "camera"), format="rgb8; jpeg compressed bgr8",
                           data=payload)


def _info(stamp: int, w: int = W, h: int = H):
    from sensor_msgs.msg import CameraInfo

    from perception_safety.ros import convert

    return CameraInfo(header=convert.header_msg(stamp, "camera"), width=w, height=h)


def _frame(pubs, stamp, payload, info_size=(W, H)):
    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    pubs["info"].publish(_info(stamp, *info_size))
    time.sleep(0.3)  # topics are not ordered with each other: the node checks an image against the latest info
    pubs["image"].publish(_compressed(payload, stamp))
    pubs["dets"].publish(convert.detection_array_msg([Detection(Box(2.0, 2.0, 10.0, 20.0), "car", 0.7)], stamp))


def _wait_result(out, stamp, ros_tools):
    from perception_safety.ros.convert import stamp_to_ns

    def find():
        return next((m for m in list(out["results"]) if stamp_to_ns(m.header.stamp) == stamp), None)

    assert ros_tools.wait_until(lambda: find() is not None, timeout=10), f"no result for {stamp}"
    return {s.name: s for s in find().status}


def _reported(out, start, text):
    for arr in list(out["diag"])[start:]:
        for s in arr.status:
            if s.name == "cmonitor: input" and s.level == b"\x01" and text in s.message:
                return s
    return None


def test_contrast_is_computed_on_the_decoded_jpeg(compressed_monitor, ros_tools):
    from perception_safety.io.image_codec import decode, encode_jpeg

    _proc, pubs, out = compressed_monitor
    img = np.random.default_rng(3).integers(0, 256, size=(H, W, 3), dtype=np.uint8)
    payload = encode_jpeg(img, 90)
    _frame(pubs, 5_000_000_000, payload)
    stat = float(_values(_wait_result(out, 5_000_000_000, ros_tools)["contrast"])["statistic"])
    expected = _row_variance(decode(payload))  # independent formula on what a receiver decodes
    assert math.isclose(stat, expected, rel_tol=1e-5)
    assert not math.isclose(stat, _row_variance(img), rel_tol=1e-3)  # the JPEG changed the pixels: not the original


@pytest.mark.parametrize("case", ["corrupt", "size"])
def test_corrupt_jpeg_and_camera_info_mismatch_are_reported_skips(compressed_monitor, ros_tools, case):
    from perception_safety.io.image_codec import encode_jpeg

    proc, pubs, out = compressed_monitor
    good = encode_jpeg(np.full((H, W, 3), 90, np.uint8))
    start = len(out["diag"])
    stamp = 6_000_000_000 if case == "corrupt" else 7_000_000_000
    if case == "corrupt":
        _frame(pubs, stamp, b"\xff\xd8" + bytes(range(200)))
        text = "cannot decode"
    else:
        _frame(pubs, stamp, good, info_size=(W * 2, H * 2))
        text = f"{W}x{H} disagrees with camera_info {2 * W}x{2 * H}"
    assert ros_tools.wait_until(lambda: _reported(out, start, text) is not None, timeout=10), proc.output()
    status = _reported(out, start, text)
    assert f"{CAM}/compressed" in status.message
    assert int(_values(status)[f"skipped[{CAM}/compressed]"]) >= 1
    # the node lives on and processes the next good frame
    _frame(pubs, stamp + 1, good)
    assert "contrast" in _wait_result(out, stamp + 1, ros_tools)


def test_overlay_is_published_rate_limited_by_frame_stamp(compressed_monitor, ros_tools):
    """max_rate_hz 2: frames 0.1 s apart give one overlay, a frame 0.5 s later the next; each is the drawn frame."""
    from perception_safety.io.image_codec import encode_jpeg
    from perception_safety.ros.convert import stamp_to_ns

    proc, pubs, out = compressed_monitor
    payload = encode_jpeg(np.full((H, W, 3), 90, np.uint8))
    base = 50_000_000_000
    for stamp in (base, base + 100_000_000, base + 200_000_000, base + 500_000_000):
        _frame(pubs, stamp, payload)
        _wait_result(out, stamp, ros_tools)
    def overlays():
        return sorted(stamp_to_ns(m.header.stamp) for m in list(out["overlay"]) if stamp_to_ns(m.header.stamp) >= base)
    assert ros_tools.wait_until(lambda: len(overlays()) >= 2, timeout=10), proc.output()
    assert overlays() == [base, base + 500_000_000]
    msg = next(m for m in list(out["overlay"]) if stamp_to_ns(m.header.stamp) == base)
    assert (msg.width, msg.height, msg.encoding) == (W, H, "rgb8")
    pixels = np.frombuffer(bytes(msg.data), np.uint8).reshape(H, W, 3)
    assert (pixels != 90).any(axis=2).mean() > 0.02  # the drawing is on it (regions, detection, verdicts)


def test_overlay_markers_show_ground_truth_missed_and_false_detections(compressed_monitor, ros_tools):
    """With the ground-truth topic, the frame's object is drawn (missed: no detection overlaps it) and the frame's
    only detection is marked false; the verdict disc is there. Colours are the drawn overlay's."""
    from perception_safety.core.types import Box, GroundTruthObject
    from perception_safety.io.image_codec import encode_jpeg
    from perception_safety.report.overlay import FALSE_DET, MISSED
    from perception_safety.ros import convert
    from perception_safety.ros.convert import stamp_to_ns

    proc, pubs, out = compressed_monitor
    stamp = 90_000_000_000
    person = GroundTruthObject.at_position(Box(30.0, 10.0, 50.0, 60.0), "pedestrian", (7.0, 0.0, 0.0))
    pubs["gt"].publish(convert.ground_truth_array_msg([person], stamp))
    time.sleep(0.3)
    _frame(pubs, stamp, encode_jpeg(np.full((H, W, 3), 90, np.uint8)))
    _wait_result(out, stamp, ros_tools)

    def mine():
        return [m for m in list(out["markers"]) if stamp_to_ns(m.header.stamp) == stamp]
    assert ros_tools.wait_until(lambda: {m.ns for m in mine()} >= {"ground_truth", "detections", "verdict"},
                                timeout=10), proc.output()
    (gt,) = [m for m in mine() if m.ns == "ground_truth"]
    (det,) = [m for m in mine() if m.ns == "detections"]
    assert [(p.x, p.y) for p in gt.points] == [(30.0, 10.0), (50.0, 10.0), (50.0, 60.0), (30.0, 60.0)]
    assert round(gt.outline_color.r * 255) == MISSED[0] and round(gt.outline_color.g * 255) == MISSED[1]
    assert round(det.outline_color.b * 255) == FALSE_DET[2] and gt.header.frame_id == "camera"
