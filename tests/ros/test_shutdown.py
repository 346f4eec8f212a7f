"""SIGINT/SIGTERM under load: the node exits 0, never ``RCLError: context is invalid`` (issue 19 item 4)."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros


def _params(tmp_path, ros_tools, name):
    doc = yaml.safe_load((ros_tools.root / "config" / "safety_monitor.yaml").read_text())
    p = doc["safety_monitor"]["ros__parameters"]
    p.update(diagnostics_period_s=0.05)
    p["monitors"]["stop_region"] = {**{k: v for k, v in p["monitors"]["stop_region"].items() if k != "corridor"},
                                    "rule": "region"}  # no mounting here: the paper's rule alone
    p["qos"]["reliable_inputs"] = True
    p["qos"]["input_depth"] = 50
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({name: doc["safety_monitor"]}))
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGINT, signal.SIGTERM, signal.SIGINT])
def test_signal_under_load_exits_zero(ros_client, ros_tools, start_node, tmp_path, sig):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    name = f"shutdown_monitor_{time.monotonic_ns() % 10**6}"
    cam, dets = f"/{name}/cam", f"/{name}/dets"
    proc = start_node("safety_monitor", name, _params(tmp_path, ros_tools, name),
                                 {"/camera/image_raw": cam, "/detections": dets}, tmp_path)
    pub_img = ros_client.publisher(Image, cam, depth=50)
    pub_det = ros_client.publisher(Detection2DArray, dets, depth=50)
    results = ros_client.collect(DiagnosticArray, f"/{name}/monitor_results")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub_img.get_subscription_count() > 0
                                and ros_client.node.count_publishers(f"/{name}/monitor_results") > 0),
                                timeout=30), proc.output()
    image = np.random.default_rng(0).integers(0, 256, size=(480, 640, 3), dtype=np.uint8)
    det = [Detection(Box(300.0, 500.0, 340.0, 600.0), "person", 0.9)]
    stop = threading.Event()

    def flood():
        k = 0
        while not stop.is_set():
            k += 1
            pub_img.publish(convert.image_msg(image, k * 1000))
            pub_det.publish(convert.detection_array_msg(det, k * 1000))
            time.sleep(0.002)

    feeder = threading.Thread(target=flood, daemon=True)
    feeder.start()
    try:
        # busy: frames are being processed (callbacks publishing results and /diagnostics) when the signal comes
        assert ros_tools.wait_until(lambda: len(results) >= 20, timeout=20), proc.output()
        code = proc.stop(sig, timeout=15)
    finally:
        stop.set()
        feeder.join(timeout=5)
    text = proc.output()
    assert code == 0, text
    assert "context is invalid" not in text and "Traceback" not in text, text
