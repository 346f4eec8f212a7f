"""The installed ``returns_logger`` executable writes an episode log the SG/RH/AC evaluation can read."""

from __future__ import annotations

import json
import math
import signal

import pytest
import yaml

pytestmark = pytest.mark.ros


def test_episode_log_records_world_state_monitor_verdicts_and_collisions(ros_client, ros_tools, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from std_msgs.msg import Header, String
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, EgoState, GroundTruthObject
    from perception_safety.io.episode_log import read_episode_log
    from perception_safety.monitors.base import Level, MonitorResult
    from perception_safety.ros import convert

    log = tmp_path / "episodes.jsonl"
    doc = yaml.safe_load((ros_tools.root / "config" / "returns_logger.yaml").read_text())
    p = doc["returns_logger"]["ros__parameters"]
    p.update(log_path=str(log), episode="ped-crossing-seed1", rollout="monitored")
    params = tmp_path / "returns_logger.yaml"
    params.write_text(yaml.safe_dump(doc))
    proc = ros_tools.NodeProcess("returns_logger", "returns_logger", params, None, tmp_path)
    pubs = {
        "results": ros_client.publisher(DiagnosticArray, "/safety_monitor/monitor_results"),
        "gt": ros_client.publisher(Detection2DArray, "/ground_truth"),
        "odom": ros_client.publisher(Odometry, "/ego/odometry"),
        "collision": ros_client.publisher(Header, "/ego/collision_stamp"),
        "episode": ros_client.publisher(String, "/returns_logger/episode"),
    }
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or all(q.get_subscription_count() for q in pubs.values()),
                                timeout=30), proc.output()

    speeds = [8.0, 8.0, 8.0, 0.0, 0.0]
    alarms = [False, True, False, False, False]
    stops = [False, True, True, True, True]
    ped = GroundTruthObject.at_position(Box(600, 480, 640, 560), "pedestrian", (12.0, 5.0, 0.0), "7")
    for k in range(5):
        stamp = (k + 1) * 50_000_000
        pubs["gt"].publish(convert.ground_truth_array_msg([ped], stamp))
        pubs["odom"].publish(convert.odometry_msg(EgoState(x=0.4 * k, speed=speeds[k]), stamp))
        if k == 2:
            pubs["collision"].publish(convert.header_msg(stamp - 10_000_000))  # between frames 1 and 2
        res = MonitorResult("monitor", alarms[k], Level.ERROR if alarms[k] else Level.OK,
                            ("contrast: low",) if alarms[k] else (), {"contrast.statistic": 1000.0 + k})
        arr = convert.diagnostic_array_msg([convert.result_status(res), convert.status(
            "stop_request", Level.WARN if stops[k] else Level.OK, "", {"alarm": stops[k]})], stamp)
        pubs["results"].publish(arr)

    def steps_logged():
        return max((int(kv.value) for arr in list(diag) for st in arr.status if st.name == "returns_logger: logger"
                    for kv in st.values if kv.key == "step"), default=0)

    assert ros_tools.wait_until(lambda: steps_logged() == 5, timeout=10), proc.output()
    # a NaN ground-truth position is skipped and reported; the node keeps running
    bad = convert.ground_truth_array_msg([ped], 999)
    bad.detections[0].results[0].pose.pose.position.x = float("nan")
    pubs["gt"].publish(bad)
    assert ros_tools.wait_until(lambda: any(
        st.name == "returns_logger: logger" and st.level == b"\x01" and "/ground_truth" in st.message
        for arr in list(diag) for st in arr.status), timeout=10), proc.output()
    assert proc.alive()
    pubs["episode"].publish(String(data=json.dumps({"event": "end", "reason": "stopped"})))
    assert ros_tools.wait_until(lambda: log.exists() and '"type":"end"' in log.read_text(), timeout=10), proc.output()
    assert proc.stop(signal.SIGINT) == 0, proc.output()

    (episode,) = read_episode_log(log)
    assert (episode.episode, episode.rollout, episode.end_reason) == ("ped-crossing-seed1", "monitored", "stopped")
    assert [s.t for s in episode.steps] == [0, 1, 2, 3, 4]
    assert [s.running for s in episode.steps] == [True, True, True, False, False]
    assert [s.collision for s in episode.steps] == [False, False, True, False, False]
    assert [s.alarm for s in episode.steps] == alarms
    assert [s.stop for s in episode.steps] == stops
    assert episode.steps[1].reasons == ("contrast: low",)
    assert episode.steps[3].values == {"contrast.statistic": 1003.0}
    (gt,) = episode.steps[0].frame.ground_truth
    assert gt.class_id == "pedestrian" and gt.track_id == "7"
    assert math.isclose(gt.distance, 13.0)  # |(12, 5, 0)|


def test_nonfinite_values_are_written_and_reported_and_frames_ordered_by_stamp(ros_client, ros_tools, start_node,
                                                                             tmp_path):
    """Issue 19 item 5: NaN/inf monitor values made steps unwritable (only a rosout line, /diagnostics OK), and
    out-of-order frames put a collision on the wrong frame."""
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from std_msgs.msg import Header
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import EgoState
    from perception_safety.io.episode_log import read_episode_log
    from perception_safety.monitors.base import Level, MonitorResult
    from perception_safety.ros import convert

    name = "returns_logger_order"
    log = tmp_path / "episodes.jsonl"
    doc = yaml.safe_load((ros_tools.root / "config" / "returns_logger.yaml").read_text())
    p = doc["returns_logger"]["ros__parameters"]
    p.update(log_path=str(log), episode="order", diagnostics_period_s=0.1)
    p["sync"]["reorder_s"] = 0.5
    topics = {k: f"/{name}/{k}" for k in ("results", "gt", "odom", "collision")}
    p["topics"].update(monitor_results=topics["results"], ground_truth=topics["gt"], odometry=topics["odom"],
                       collision=topics["collision"])
    params = tmp_path / "returns_logger.yaml"
    params.write_text(yaml.safe_dump({name: doc["returns_logger"]}))
    proc = start_node("returns_logger", name, params, None, tmp_path)
    pubs = {"results": ros_client.publisher(DiagnosticArray, topics["results"]),
            "gt": ros_client.publisher(Detection2DArray, topics["gt"]),
            "odom": ros_client.publisher(Odometry, topics["odom"]),
            "collision": ros_client.publisher(Header, topics["collision"])}
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    assert ros_tools.wait_until(lambda: not proc.alive() or all(q.get_subscription_count() for q in pubs.values()),
                                timeout=30), proc.output()
    ms = 1_000_000
    for k in range(1, 5):
        pubs["gt"].publish(convert.ground_truth_array_msg([], k * 50 * ms))
        pubs["odom"].publish(convert.odometry_msg(EgoState(x=float(k), speed=5.0), k * 50 * ms))
    pubs["collision"].publish(convert.header_msg(75 * ms))  # between frames 1 and 2: belongs to frame 2
    values = {1: 1.0, 2: math.nan, 3: 3.0, 4: math.inf}
    for k in (1, 3, 2, 4):  # frame 2 arrives after frame 3
        res = MonitorResult("monitor", False, Level.OK, (), {"contrast.statistic": values[k]})
        pubs["results"].publish(convert.diagnostic_array_msg(
            [convert.result_status(res), convert.status("stop_request", Level.OK, "", {"alarm": False})], k * 50 * ms))

    def logger_status():
        return next((st for arr in reversed(list(diag)) for st in arr.status if st.name == f"{name}: logger"), None)

    def vals():
        st = logger_status()
        return {kv.key: kv.value for kv in st.values} if st is not None else {}

    assert ros_tools.wait_until(lambda: vals().get("step") == "4", timeout=10), proc.output()
    st = logger_status()
    assert st.level == b"\x01" and "non-finite" in st.message
    assert vals()["nonfinite_values"] == "2" and vals()["nonfinite_steps"] == "2" and vals()["late_frames"] == "0"
    assert proc.stop(signal.SIGINT) == 0, proc.output()
    (episode,) = read_episode_log(log)
    assert [s.frame.stamp_ns for s in episode.steps] == [50 * ms, 100 * ms, 150 * ms, 200 * ms]
    assert [s.collision for s in episode.steps] == [False, True, False, False]
    stat = [s.values["contrast.statistic"] for s in episode.steps]
    assert stat[0] == 1.0 and stat[2] == 3.0 and math.isnan(stat[1]) and math.isnan(stat[3])
    lines = [json.loads(x) for x in log.read_text().splitlines() if '"type":"step"' in x]
    assert [x.get("nonfinite") for x in lines] == [None, ["contrast.statistic"], None, ["contrast.statistic"]]
    assert lines[1]["values"]["contrast.statistic"] is None
