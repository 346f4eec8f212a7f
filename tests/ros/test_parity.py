"""Online/offline parity: the offline monitors on a bag == the safety_monitor node fed by replaying that bag."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
import yaml

from .conftest import BIN

pytestmark = pytest.mark.ros

W, H = 128, 72
WARNING = {"units": "px", "left": 27.0, "top": 47.0, "width": 73.0, "height": 25.0, "image_size": [128, 72]}
DANGER = {"units": "px", "left": 38.0, "top": 47.0, "width": 51.0, "height": 25.0, "image_size": [128, 72]}


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
        "plausibility": {"danger_region": {**DANGER, "image_size": [W, H]},
                         "warning_region": {**WARNING, "image_size": [W, H]}, "max_jump_px_per_frame": 5.0,
                         "px_image_size": [W, H]},
        "stop_region": {"region": {**WARNING, "image_size": [W, H]}},
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
    cmd = [str(BIN / "perception-safety"), "replay", str(bag), "--fast",
           "--wait-subscribers", "20", "--sync-topic", "/safety_monitor/monitor_results"]
    replay = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert f"published {4 * len(frames)} message(s)" in replay.stdout
    assert ros_tools.wait_until(lambda: len(results) >= len(frames), timeout=30), proc.output()
    assert proc.stop() == 0

    online = {}
    stops = {}
    for arr in results:
        *monitors, stop = arr.status
        assert stop.name == "stop_request"
        online[stamp_to_ns(arr.header.stamp)] = [result_from_status(s) for s in monitors]
        stops[stamp_to_ns(arr.header.stamp)] = {kv.key: kv.value for kv in stop.values}["alarm"] == "true"
    assert sorted(online) == sorted(offline)

    # `perception-safety monitor` with the node's own params file: the same verdict on every frame (issue 23 item 3)
    cmd = [str(BIN / "perception-safety"), "monitor", str(bag), "--config", str(params), "--out", str(tmp_path / "m")]
    run = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in (tmp_path / "m" / "verdicts.jsonl").read_text().splitlines()]
    assert [x["stamp_ns"] for x in lines] == sorted(online)
    from perception_safety.monitors.verdicts import verdict_of

    for x in lines:
        want = verdict_of(x["stamp_ns"], online[x["stamp_ns"]], stops[x["stamp_ns"]]).record()
        assert {k: x[k] for k in want} == want, x["stamp_ns"]
    assert sum(x["stop"] for x in lines) > 0 and any(x["level"] == "ERROR" for x in lines)  # not all quiet
    for stamp, expected in offline.items():
        got = online[stamp]
        assert [r.name for r in got] == [r.name for r in expected], stamp
        for g, e in zip(got, expected, strict=True):
            assert (g.alarm, g.level, g.reasons) == (e.alarm, e.level, e.reasons), (stamp, g.name)
            assert g.values == {k: float(v) for k, v in e.values.items()}, (stamp, g.name)


@pytest.fixture(scope="module")
def demo_episode(tmp_path_factory):
    """One episode of the demo (config/demo.yaml: 1280x720 camera, JPEG recording), heavy smoke: the builtin
    simulator, the simulated detector, the runner's monitors on the decoded JPEG frames."""
    from perception_safety.sim.config import PerturbationSpec, load_episodes_config
    from perception_safety.sim.sweep import monitors_for, run_sweep

    from .conftest import ROOT

    path = ROOT / "config" / "demo.yaml"
    cfg = load_episodes_config(path)
    smoke = (PerturbationSpec(name="smoke", levels=(3,)),)
    cfg = cfg.model_copy(update={"include_clean": False, "perturbations": smoke})
    out = tmp_path_factory.mktemp("demo_episode")
    run_sweep(cfg, out, jobs=1, monitors=monitors_for(cfg, path))
    (log,) = sorted((out / "logs").glob("*.jsonl"))
    return out / "bags" / log.stem / "perception", log


def test_demo_episode_bag_replayed_into_online_gives_the_logged_results(demo_episode, ros_client, ros_tools,
                                                                        tmp_path):
    """`make demo`'s recording replayed into `perception-safety online` (config/online.yaml): frame by frame
    the monitor results the episode runner computed and logged for that bag."""
    import signal

    from diagnostic_msgs.msg import DiagnosticArray

    from perception_safety.io.bag import read_monitor_results
    from perception_safety.io.episode_log import read_episode_log
    from perception_safety.ros.convert import result_from_status, stamp_to_ns

    bag, log = demo_episode
    recorded = dict(read_monitor_results(bag))
    logged = {ep.rollout: ep for ep in read_episode_log(log)}["perception"]
    assert [st.frame.stamp_ns for st in logged.steps] == list(recorded)
    assert len(recorded) > 30
    flat = [r for rs in recorded.values() for r in rs]
    assert {r.name for r in flat if r.alarm} >= {"contrast", "stop_region", "monitor"}  # not all quiet

    doc = yaml.safe_load((ros_tools.root / "config" / "online.yaml").read_text())
    doc["returns_logger"]["ros__parameters"]["log_path"] = str(tmp_path / "online.jsonl")
    for name in ("bbsl_monitor",):
        doc[name]["ros__parameters"]["specs"] = [str(ros_tools.root / "config/specs/stop_region.bbsl")]
        doc[name]["ros__parameters"]["bbsl_config"] = str(ros_tools.root / "config/bbsl_online.yaml")
    params = tmp_path / "online.yaml"
    params.write_text(yaml.safe_dump(doc))
    results = ros_client.collect(DiagnosticArray, "/safety_monitor/monitor_results")
    cases = ros_client.collect(DiagnosticArray, "/bbsl_monitor/cases")
    out_path = tmp_path / "online.out"
    with open(out_path, "w+b") as out:
        proc = subprocess.Popen([str(BIN / "perception-safety"), "online", "--params",
                                 str(params)], env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT)
        try:
            assert ros_tools.wait_until(lambda: proc.poll() is not None or all(
                ros_client.node.count_publishers(t) > 0 for t in
                ("/safety_monitor/monitor_results", "/bbsl_monitor/cases")), timeout=60), out_path.read_text()
            image = "/camera/image_raw/compressed"
            cmd = [str(BIN / "perception-safety"), "replay", str(bag), "--fast",
                   "--wait-subscribers", "20", "--sync-topic", "/safety_monitor/monitor_results",
                   "--sync-timeout", "20", "--topics", image, "/camera/camera_info", "/detections", "/ground_truth",
                   "/ego/odometry", "--require", image, "/detections"]
            replay = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=300)
            assert replay.returncode == 0, replay.stderr
            assert f"published {5 * len(recorded)} message(s)" in replay.stdout, replay.stdout + replay.stderr
            assert f"replay: {5 * len(recorded)}/{5 * len(recorded)} message(s)" in replay.stderr  # progress
            assert ros_tools.wait_until(lambda: len(results) >= len(recorded) and len(cases) >= len(recorded),
                                        timeout=30), out_path.read_text()
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
    assert code == 0, out_path.read_text()

    online = {}
    for arr in results:
        *monitors, stop = arr.status
        assert stop.name == "stop_request"
        online[stamp_to_ns(arr.header.stamp)] = [result_from_status(s) for s in monitors]
    assert list(online) == list(recorded)  # every frame, in order, none lost
    for stamp, expected in recorded.items():
        got = online[stamp]
        assert [r.name for r in got] == [r.name for r in expected], stamp
        for g, e in zip(got, expected, strict=True):
            assert (g.alarm, g.level, g.reasons) == (e.alarm, e.level, e.reasons), (stamp, g.name)
            assert g.values == e.values, (stamp, g.name)
    # the episode log's m_f alarm is the combined monitor's, frame by frame
    assert [st.alarm for st in logged.steps] == [online[s][2].alarm for s in recorded]
