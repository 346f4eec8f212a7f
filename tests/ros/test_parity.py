"""Online/offline parity: the offline monitors on a bag == the safety_monitor node fed by replaying that bag."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros

W, H = 128, 72
WARNING = {"left": 27.0, "top": 47.0, "width": 73.0, "height": 25.0}
DANGER = {"left": 38.0, "top": 47.0, "width": 51.0, "height": 25.0}


def _frames(n: int = 36):
    """A walking pedestrian entering the warning then danger region, a ghost popping up, a fog episode."""
    from perception_safety.core.types import Box, Detection, EgoState, Frame, GroundTruthObject

    rng = np.random.default_rng(7)
    frames = []
    for k in range(n):
        stamp = 1_700_000_000_000_000_000 + k * 50_000_000  # 20 fps
        img = rng.integers(0, 256, size=(H, W, 3), dtype=np.uint8)
        if 24 <= k < 30:  # fog: contrast collapses
            img = (img // 32 + 120).astype(np.uint8)
        x = 2.0 + 3.0 * k
        dets = [Detection(Box(x, 40.0, x + 8.0, 68.0), "person", 0.8), Detection(Box(100, 5, 120, 20), "car", 0.6)]
        if k in (14, 15):
            dets.append(Detection(Box(60.0, 55.0, 70.0, 71.0), "pedestrian", 0.55))  # ghost in the danger region
        gt = (GroundTruthObject.at_position(Box(x, 40.0, x + 8.0, 68.0), "person", (20.0 - 0.4 * k, 3.0, 0.0)),)
        frames.append(Frame(stamp_ns=stamp, detections=tuple(dets), ground_truth=gt, ego=EgoState(x=0.4 * k, speed=8.0),
                            image=img, frame_id="camera"))
    return frames


def _params_doc():
    monitors = {
        "plausibility": {"danger_region": dict(DANGER), "warning_region": dict(WARNING), "max_jump_px_per_frame": 5.0},
        "stop_region": {"region": dict(WARNING)},
        "contrast": {"threshold": 1580.0},
    }
    return {"safety_monitor": {"ros__parameters": {
        "qos": {"reliable_inputs": True, "input_depth": 200, "output_depth": 200},
        "topics": {"image": "/parity/image", "detections": "/parity/detections"},
        "monitors": monitors,
    }}}


def _offline(bag, monitors_cfg):
    """The offline evaluator: frames from io.bag, the monitors package's own m_f and stop rule."""
    from perception_safety.io.bag import BagTopics, read_frames
    from perception_safety.monitors.composite import build_runtime_monitor, build_stop_rule

    runtime, stop = build_runtime_monitor(monitors_cfg), build_stop_rule(monitors_cfg)
    out = {}
    topics = BagTopics(image="/parity/image", detections="/parity/detections", ground_truth="", ego="")
    for frame in read_frames(bag, topics):
        comp = runtime.evaluate(frame)
        out[frame.stamp_ns] = [*comp.parts, comp.combined, stop.update(frame)]
    return out


def test_replayed_bag_gives_the_offline_results_frame_by_frame(ros_client, ros_tools, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray

    from perception_safety.io.bag import BagTopics, write_frames
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.ros.convert import result_from_status, stamp_to_ns

    frames = _frames()
    bag = tmp_path / "parity_bag"
    # the bag carries ground truth and odometry too: replay publishes every topic, the node reads two
    write_frames(bag, frames, "mcap", BagTopics(image="/parity/image", detections="/parity/detections"))
    doc = _params_doc()
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(doc))
    cfg = MonitorsConfig.model_validate(doc["safety_monitor"]["ros__parameters"]["monitors"])
    offline = _offline(bag, cfg)
    assert len(offline) == len(frames)
    # the scenario exercises every verdict, so agreement is not trivially "all quiet"
    flat = [r for rs in offline.values() for r in rs]
    assert {r.name for r in flat if r.alarm} >= {"contrast", "plausibility", "stop_region", "monitor"}

    results = ros_client.collect(DiagnosticArray, "/safety_monitor/monitor_results")
    proc = ros_tools.NodeProcess("safety_monitor", "safety_monitor", params, None, tmp_path)
    assert ros_tools.wait_until(lambda: not proc.alive()
                                or ros_client.node.count_publishers("/safety_monitor/monitor_results") > 0,
                                timeout=30), proc.output()
    cmd = [str(ros_tools.root / ".venv/bin/perception-safety"), "replay", str(bag), "--fast",
           "--wait-subscribers", "20", "--sync-topic", "/safety_monitor/monitor_results"]
    replay = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert f"published {4 * len(frames)} message(s)" in replay.stdout
    assert ros_tools.wait_until(lambda: len(results) >= len(frames), timeout=30), proc.output()
    assert proc.stop() == 0

    online = {}
    for arr in results:
        *monitors, stop = arr.status
        assert stop.name == "stop_request"
        online[stamp_to_ns(arr.header.stamp)] = [result_from_status(s) for s in monitors]
    assert sorted(online) == sorted(offline)
    for stamp, expected in offline.items():
        got = online[stamp]
        assert [r.name for r in got] == [r.name for r in expected], stamp
        for g, e in zip(got, expected, strict=True):
            assert (g.alarm, g.level, g.reasons) == (e.alarm, e.level, e.reasons), (stamp, g.name)
            assert g.values == {k: float(v) for k, v in e.values.items()}, (stamp, g.name)
