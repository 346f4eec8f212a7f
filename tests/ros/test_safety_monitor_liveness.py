"""Issue 19 item 1 over DDS: inputs arrive but no frame is processed -> WARN, then ERROR and stop requests.

Reproduction: image/detection pairs whose stamps never match (the node receives everything, pairs nothing).
Before the fix /diagnostics said OK ("receiving", "waiting for the first frame") and no stop was requested.
"""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros


def _values(status) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def test_unpaired_inputs_warn_then_error_and_request_a_stop(ros_client, ros_tools, start_node, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    from std_msgs.msg import Bool
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    name = "liveness_monitor"
    doc = yaml.safe_load((ros_tools.root / "config" / "safety_monitor.yaml").read_text())
    p = doc["safety_monitor"]["ros__parameters"]
    p.update(stale_timeout_s=0.6, diagnostics_period_s=0.1)
    p["monitors"]["stop_region"] = {**{k: v for k, v in p["monitors"]["stop_region"].items() if k != "corridor"},
                                    "rule": "region"}  # no mounting here: the paper's rule alone
    p["liveness"]["error_after_s"] = 1.2
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({name: doc["safety_monitor"]}))
    cam, dets = "/liveness/cam", "/liveness/dets"
    proc = start_node("safety_monitor", name, params, {"/camera/image_raw": cam, "/detections": dets},
                                 tmp_path)
    pub_img = ros_client.publisher(Image, cam)
    pub_det = ros_client.publisher(Detection2DArray, dets)
    stops = ros_client.collect(Bool, f"/{name}/stop_request")
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub_img.get_subscription_count() > 0
                                and pub_det.get_subscription_count() > 0
                                and ros_client.node.count_publishers(f"/{name}/stop_request") > 0),
                                timeout=30), proc.output()
    image = np.random.default_rng(0).integers(0, 256, size=(72, 128, 3), dtype=np.uint8)
    det = [Detection(Box(2.0, 2.0, 10.0, 20.0), "car", 0.9)]
    done = threading.Event()

    def feed():  # 30 Hz, detection stamps 1 ms after the image stamps: exact pairing never matches
        k = 0
        while not done.is_set():
            k += 1
            pub_img.publish(convert.image_msg(image, k * 33_000_000))
            pub_det.publish(convert.detection_array_msg(det, k * 33_000_000 + 1_000_000))
            time.sleep(1 / 30)

    start = len(diag)
    feeder = threading.Thread(target=feed, daemon=True)
    t0 = time.monotonic()
    feeder.start()
    try:
        def liveness(level, says=""):
            return next((s for a in list(diag)[start:] for s in a.status
                         if s.name == f"{name}: liveness" and s.level == level and says in s.message), None)

        assert ros_tools.wait_until(lambda: liveness(b"\x01") is not None, timeout=10), proc.output()
        warn_at = time.monotonic() - t0
        # the unpaired ERROR (a silence ERROR can come first, while discovery still holds back the first inputs)
        unpaired = "inputs arrive but no frame processed"
        assert ros_tools.wait_until(lambda: liveness(b"\x02", unpaired) is not None, timeout=10), proc.output()
        assert ros_tools.wait_until(lambda: len(stops) >= 3, timeout=5), proc.output()
    finally:
        done.set()
        feeder.join(timeout=5)
    assert warn_at >= 0.5  # WARN only after stale_timeout_s of inputs without a frame
    assert all(m.data for m in stops)  # no frame was processed, so every stop message is a liveness stop
    err = liveness(b"\x02", unpaired)
    vals = _values(err)
    assert unpaired in err.message and "unpaired" in err.message
    assert float(vals["frames_processed"]) == 0.0 and float(vals["frame_rate_hz"]) == 0.0
    assert float(vals[f"input_rate_hz[{cam}]"]) > 5.0
    assert "transport" in vals and "dds_profile" in vals
    # never OK while this happened: no status of this node said OK after the inputs started
    ok = [s.name for a in list(diag)[start:] for s in a.status if s.name.startswith(name) and s.level == b"\x00"]
    assert ok == [], ok
    assert proc.stop(signal.SIGINT) == 0, proc.output()
