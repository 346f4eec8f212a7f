"""Issue 19 item 2 over DDS: one Detection2DArray with thousands of detections is rejected before decoding.

Reproduction: 100k detections drove the node to 24 GB and an OOM kill (8k: 3.1 s and 2.6 GB in the plausibility
monitor's detections x tracks matrices), /diagnostics silent. Here the node runs under a 3 GB address-space cap
(its normal peak is ~1.5 GB of mostly reserved address space) and gets 20 000 person boxes in the danger region.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros

MEMORY_CAP = 3 * 1024**3


def _values(status) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def test_oversized_detection_message_is_rejected_and_reported(ros_client, ros_tools, start_node, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    name = "limits_monitor"
    doc = yaml.safe_load((ros_tools.root / "config" / "safety_monitor.yaml").read_text())
    p = doc["safety_monitor"]["ros__parameters"]
    p.update(diagnostics_period_s=0.2)
    p["monitors"]["stop_region"] = {**{k: v for k, v in p["monitors"]["stop_region"].items() if k != "corridor"},
                                    "rule": "region"}  # no mounting here: the paper's rule alone
    p["qos"]["reliable_inputs"] = True
    p["limits"]["max_detections"] = 500
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({name: doc["safety_monitor"]}))
    cam, dets = "/limits/cam", "/limits/dets"
    proc = start_node("safety_monitor", name, params, {"/camera/image_raw": cam, "/detections": dets},
                                 tmp_path, memory_limit_bytes=MEMORY_CAP)
    pub_img = ros_client.publisher(Image, cam)
    pub_det = ros_client.publisher(Detection2DArray, dets)
    results = ros_client.collect(DiagnosticArray, f"/{name}/monitor_results")
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub_img.get_subscription_count() > 0
                                and pub_det.get_subscription_count() > 0
                                and ros_client.node.count_publishers(f"/{name}/monitor_results") > 0),
                                timeout=30), proc.output()
    image = np.random.default_rng(0).integers(0, 256, size=(720, 1280, 3), dtype=np.uint8)
    rng = np.random.default_rng(1)
    xy = rng.uniform((385, 470), (850, 660), size=(20_000, 2))  # all in the danger region
    flood = [Detection(Box(x, y, x + 40.0, y + 60.0), "person", 0.9) for x, y in xy]
    pub_img.publish(convert.image_msg(image, 1_000_000_000))
    pub_det.publish(convert.detection_array_msg(flood, 1_000_000_000))

    def rejected():
        return next((s for a in list(diag) for s in a.status if s.name == f"{name}: input"
                     and "20000 detections in one message > limits.max_detections 500" in s.message), None)

    assert ros_tools.wait_until(lambda: rejected() is not None, timeout=30), proc.output()
    st = rejected()
    assert st.level == b"\x01" and int(_values(st)[f"skipped[{dets}]"]) == 1
    assert results == []  # the frame of the rejected message was not judged on a partial list
    # the node is alive and judges the next frame normally
    pub_img.publish(convert.image_msg(image, 2_000_000_000))
    pub_det.publish(convert.detection_array_msg(flood[:3], 2_000_000_000))
    assert ros_tools.wait_until(lambda: len(results) == 1, timeout=15), proc.output()
    assert {s.name for s in results[0].status} >= {"plausibility", "contrast", "stop_request"}
    assert proc.alive()
    assert proc.stop(signal.SIGINT) == 0, proc.output()

