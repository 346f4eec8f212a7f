"""The ``detector`` node over DDS: image in, Detection2DArray with the image's header out; bad frames and a model
that does not match its YAML are reported, never fatal at run time."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detectors"))
from onnx_models import constant_model, identity_model, write_yaml  # noqa: E402

MODULE = "perception_safety.ros.detector_node"


def _params(tmp_path, name, model_yaml, **extra):
    p = {"detector": {"kind": "onnx", "onnx_model": str(model_yaml)}, "diagnostics_period_s": 0.2,
         "qos": {"reliable_inputs": True, "input_depth": 10}, **extra}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({name: {"ros__parameters": p}}))
    return path


def _start(ros_client, ros_tools, start_node, tmp_path, name, model_yaml):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    cam, dets = f"/{name}/cam", f"/{name}/dets"
    proc = start_node("detector", name, _params(tmp_path, name, model_yaml),
                                 {"/camera/image_raw": cam, "/detections": dets}, tmp_path, module=MODULE)
    pub = ros_client.publisher(Image, cam)
    out = ros_client.collect(Detection2DArray, dets)
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub.get_subscription_count() > 0
                                and ros_client.node.count_publishers(dets) > 0), timeout=30), proc.output()
    return proc, pub, out, diag


def test_detections_carry_the_image_header_and_known_boxes(ros_client, ros_tools, start_node, tmp_path):
    from perception_safety.ros import convert

    rows = np.asarray([[[32.0, 16.0, 8.0, 8.0, 0.8, 0.1]]], np.float32)  # one person at (28..36, 12..20) in 64x64
    model = constant_model(tmp_path / "m.onnx", {"output0": rows}, [1, 3, 64, 64])
    yml = write_yaml(tmp_path / "m.yaml", model, input={"width": 64, "height": 64, "resize": "stretch"},
                     output={"decoder": "yolo"}, classes=["person", "car"])
    proc, pub, out, _diag = _start(ros_client, ros_tools, start_node, tmp_path, "det_node", yml)
    image = np.zeros((72, 128, 3), np.uint8)  # stretch 2 x 1.125
    pub.publish(convert.image_msg(image, 5_000_000_123, frame_id="front_cam"))
    assert ros_tools.wait_until(lambda: len(out) >= 1, timeout=10), proc.output()
    msg = out[0]
    assert convert.stamp_to_ns(msg.header.stamp) == 5_000_000_123 and msg.header.frame_id == "front_cam"
    (d,) = convert.detections_from_msg(msg)
    assert d.class_id == "person" and d.score == pytest.approx(0.8)
    assert (d.box.x_min, d.box.y_min, d.box.x_max, d.box.y_max) == pytest.approx((56.0, 13.5, 72.0, 22.5))
    assert proc.stop(signal.SIGINT) == 0, proc.output()


def test_output_that_does_not_match_the_yaml_is_reported_and_the_node_lives(ros_client, ros_tools, start_node,
                                                                           tmp_path):
    from perception_safety.ros import convert

    # dynamic input size: the shapes cannot be checked at load; the output (the image tensor) fits no decoder
    model = identity_model(tmp_path / "id.onnx", [1, 3, "h", "w"])
    yml = write_yaml(tmp_path / "id.yaml", model, input={"width": 32, "height": 32},
                     output={"decoder": "yolo", "tensor": "out"}, classes=["person"])
    proc, pub, out, diag = _start(ros_client, ros_tools, start_node, tmp_path, "det_bad", yml)
    pub.publish(convert.image_msg(np.zeros((32, 32, 3), np.uint8), 1))
    pub.publish(convert.image_msg(np.zeros((32, 32, 3), np.uint8), 2))

    def reported():
        return [s for a in list(diag) for s in a.status if s.name == "det_bad: detector" and s.level == b"\x01"
                and "yolo expects (1, N, 5) or (1, 5, N) for 1 classes" in s.message]

    assert ros_tools.wait_until(lambda: len(reported()) > 0, timeout=10), proc.output()
    vals = {kv.key: kv.value for kv in reported()[-1].values}
    assert int(vals["skipped[/det_bad/cam]"]) >= 1
    assert out == [] and proc.alive()
    assert proc.stop(signal.SIGINT) == 0, proc.output()


def test_model_yaml_mismatch_stops_the_node_at_start_naming_file_and_key(start_node, tmp_path):
    rows = np.zeros((1, 4, 7), np.float32)  # rows of 7 = 4 + 3 classes; the YAML lists 1 (width 5)
    model = constant_model(tmp_path / "m.onnx", {"output0": rows}, [1, 3, 64, 64])
    yml = write_yaml(tmp_path / "m.yaml", model, input={"width": 64, "height": 64}, output={"decoder": "yolo"},
                     classes=["person"])
    proc = start_node("detector", "det_start", _params(tmp_path, "det_start", yml), None, tmp_path,
                                 module=MODULE)
    proc.proc.wait(timeout=30)
    assert proc.stop() == 2
    text = proc.output()
    assert f"{yml}: classes" in text and "Traceback" not in text, text


def test_nan_outputs_are_error_frames_never_an_empty_detection_array(ros_client, ros_tools, start_node, tmp_path):
    """Issue 25 item 3: an all-NaN model became "0 detections" on /detections (a clear road it never saw)."""
    from perception_safety.ros import convert

    rows = np.full((1, 6, 4), np.nan, np.float32)  # 4 candidates of 4 box + 2 class values, all NaN
    model = constant_model(tmp_path / "nan.onnx", {"output0": rows}, [1, 3, 64, 64])
    yml = write_yaml(tmp_path / "nan.yaml", model, input={"width": 64, "height": 64}, output={"decoder": "yolo"},
                     classes=["person", "car"])
    proc, pub, out, diag = _start(ros_client, ros_tools, start_node, tmp_path, "det_nan", yml)
    for k in range(3):
        pub.publish(convert.image_msg(np.zeros((64, 64, 3), np.uint8), k + 1))

    def errors():
        return [s for a in list(diag) for s in a.status if s.name == "det_nan: detector" and s.level == b"\x02"]

    assert ros_tools.wait_until(lambda: any(int({kv.key: kv.value for kv in s.values}["nonfinite_frames"]) == 3
                                            for s in errors()), timeout=10), proc.output()
    last = errors()[-1]
    vals = {kv.key: kv.value for kv in last.values}
    assert int(vals["nonfinite_values"]) == 3 * rows.size and vals["detections_published"] == "0"
    assert "24 of 24 output values are NaN/inf" in last.message
    time.sleep(0.5)
    assert out == [] and proc.alive()  # nothing claims an empty road
    assert proc.stop(signal.SIGINT) == 0, proc.output()
