"""``bbsl_monitor`` checks its specs' image size against the camera's CameraInfo (issue 23): another size is an
ERROR on every spec status and on ``/diagnostics``, never an OK about image-relative terms placed elsewhere."""

from __future__ import annotations

import signal
import time

import pytest
import yaml

pytestmark = pytest.mark.ros

DETS, INFO = "/btest/dets", "/btest/camera_info"


def test_spec_image_size_other_than_the_camera_is_an_error_until_it_fits(ros_client, ros_tools, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import CameraInfo
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    doc = yaml.safe_load((ros_tools.root / "config" / "bbsl_monitor.yaml").read_text())
    p = doc["bbsl_monitor"]["ros__parameters"]
    p["specs"] = [str(ros_tools.root / "config/specs/s3_two_cases.bbsl")]
    p["bbsl_config"] = str(ros_tools.root / "config/bbsl.yaml")  # image_size 1242x375
    p["classes"] = ["car"]
    p["qos"]["reliable_inputs"] = True
    p["diagnostics_period_s"] = 0.2
    p["topics"]["camera_info"] = INFO
    params = tmp_path / "bbsl_monitor.yaml"
    params.write_text(yaml.safe_dump({"bbsl_cam": doc["bbsl_monitor"]}))
    proc = ros_tools.NodeProcess("bbsl_monitor", "bbsl_cam", params, {"/detections": DETS}, tmp_path)
    pub, info = ros_client.publisher(Detection2DArray, DETS), ros_client.publisher(CameraInfo, INFO)
    cases = ros_client.collect(DiagnosticArray, "/bbsl_cam/cases")
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub.get_subscription_count() > 0 and
                                info.get_subscription_count() > 0), timeout=30), proc.output()

    def camera_status(level: bytes):
        def find():
            for arr in reversed(list(diag)):
                for s in arr.status:
                    if s.name == "bbsl_cam: camera":
                        return s
            return None
        assert ros_tools.wait_until(lambda: (s := find()) is not None and s.level == level, timeout=10), find()
        return find()

    assert camera_status(b"\x03").message.startswith("no CameraInfo yet")  # STALE, not OK
    info.publish(CameraInfo(header=convert.header_msg(1, "camera"), width=1280, height=720))
    st = camera_status(b"\x02")
    assert st.message == ("configuration error: the specs are compiled for a 1242x375 image (bbsl_config image_size), "
                          "but the camera gives 1280x720")
    time.sleep(0.3)
    pub.publish(convert.detection_array_msg([Detection(Box(500.0, 300.0, 600.0, 350.0), "car", 0.9)], 10))
    assert ros_tools.wait_until(lambda: len(cases) >= 1, timeout=10), proc.output()
    (spec,) = cases[0].status
    assert spec.level == b"\x02"
    assert spec.message.startswith("configuration error: the specs are compiled for a 1242x375")
    info.publish(CameraInfo(header=convert.header_msg(2, "camera"), width=1242, height=375))
    assert camera_status(b"\x00").message == "specs compiled for the camera's 1242x375 image"
    assert proc.alive(), proc.output()
    assert proc.stop(signal.SIGINT) == 0, proc.output()
