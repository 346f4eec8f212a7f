"""The installed ``bbsl_monitor`` executable: active BBSL cases per spec on detection messages."""

from __future__ import annotations

import signal

import pytest
import yaml

pytestmark = pytest.mark.ros

DETS = "/test/bbsl_dets"


def _interval_overlap(a, b) -> bool:
    """Definition 6 of Tanaka et al.: a ≈ b iff lo(b) <= hi(a) and lo(a) <= hi(b)."""
    return b[0] <= a[1] and a[0] <= b[1]


def _expected_s3(box) -> str:
    """S3 (Listing 3) by hand: stop iff PROJ_x ≈ [420, 821] and PROJ_y ≈ [275, 375] (config/bbsl.yaml)."""
    x, y = (box[0], box[2]), (box[1], box[3])
    return "stop" if _interval_overlap(x, (420, 821)) and _interval_overlap(y, (275, 375)) else "NOT stop"


def test_active_cases_per_spec_and_sigterm(ros_client, ros_tools, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    doc = yaml.safe_load((ros_tools.root / "config" / "bbsl_monitor.yaml").read_text())
    p = doc["bbsl_monitor"]["ros__parameters"]
    p["specs"] = [str(ros_tools.root / "config/specs/s3_two_cases.bbsl"),
                  str(ros_tools.root / "config/specs/s1_stopping_distance.bbsl")]
    p["bbsl_config"] = str(ros_tools.root / "config/bbsl.yaml")
    p["classes"] = ["car"]
    p["qos"]["reliable_inputs"] = True
    params = tmp_path / "bbsl_monitor.yaml"
    params.write_text(yaml.safe_dump(doc))
    proc = ros_tools.NodeProcess("bbsl_monitor", "bbsl_monitor", params, {"/detections": DETS}, tmp_path)
    pub = ros_client.publisher(Detection2DArray, DETS)
    cases = ros_client.collect(DiagnosticArray, "/bbsl_monitor/cases")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub.get_subscription_count() > 0 and
                                ros_client.node.count_publishers("/bbsl_monitor/cases") > 0), timeout=30), \
        proc.output()

    ahead, aside, person = (500.0, 300.0, 600.0, 350.0), (10.0, 300.0, 100.0, 350.0), (500.0, 300.0, 600.0, 350.0)
    frames = [
        [Detection(Box(*ahead), "car", 0.9)],
        [Detection(Box(*aside), "car", 0.9)],
        [Detection(Box(*ahead), "car", 0.9), Detection(Box(*aside), "car", 0.8)],
        [Detection(Box(*person), "person", 0.9)],  # not a subject class: no case
    ]
    for i, dets in enumerate(frames):
        pub.publish(convert.detection_array_msg(dets, 100 + i))
    assert ros_tools.wait_until(lambda: len(cases) >= len(frames), timeout=10), proc.output()
    by_stamp = {convert.stamp_to_ns(m.header.stamp): {s.name: s for s in m.status} for m in cases}

    assert _expected_s3(ahead) == "stop" and _expected_s3(aside) == "NOT stop"
    s3 = [by_stamp[100 + i]["bbsl_monitor: s3_two_cases"] for i in range(4)]
    assert [s.message for s in s3] == ["stop", "NOT stop", "stop, NOT stop", "no case active"]
    counts = {kv.key: kv.value for kv in s3[2].values}
    assert (counts["stop"], counts["NOT stop"], counts["subjects"]) == ("1", "1", "2")
    assert s3[0].level == b"\x01" and s3[1].level == b"\x00"  # alert_cases: [stop] -> WARN
    assert "bbsl_monitor: s1_stopping_distance" in by_stamp[100]

    # a NaN box is not judged: ERROR per spec on ~/cases at its stamp, reported on /diagnostics; the node keeps
    # evaluating
    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    bad = convert.detection_array_msg([Detection(Box(*ahead), "car", 0.9)], 200)
    bad.detections[0].bbox.center.position.y = float("inf")
    pub.publish(bad)
    assert ros_tools.wait_until(lambda: any(
        st.name == "bbsl_monitor: input" and st.level == b"\x01" and DETS in st.message and "non-finite" in st.message
        for arr in list(diag) for st in arr.status), timeout=10), proc.output()
    pub.publish(convert.detection_array_msg([Detection(Box(*aside), "car", 0.9)], 201))
    assert ros_tools.wait_until(lambda: any(convert.stamp_to_ns(m.header.stamp) == 201 for m in list(cases)))
    unjudged = [m for m in list(cases) if convert.stamp_to_ns(m.header.stamp) == 200]
    assert len(unjudged) == 1 and {s.name for s in unjudged[0].status} == {
        "bbsl_monitor: s3_two_cases", "bbsl_monitor: s1_stopping_distance"}
    assert all(s.level == b"\x02" and s.message.startswith("unjudged: ") and "non-finite" in s.message
               for s in unjudged[0].status)
    assert proc.stop(signal.SIGTERM) == 0, proc.output()


def test_spec_that_fails_to_parse_stops_the_node_with_line_and_column(ros_tools, tmp_path):
    spec = tmp_path / "broken.bbsl"
    spec.write_text("exfunction\n  vehicle():bb\nendexfunction\ncase x\n"
                    "  let v : bb = vehicle() in PROJ_x(v) ~~ [1,2]\nendcase\n")
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"bbsl_monitor": {"ros__parameters": {"specs": [str(spec)]}}}))
    proc = ros_tools.NodeProcess("bbsl_monitor", "bbsl_monitor", params, None, tmp_path)
    proc.proc.wait(timeout=30)
    assert proc.stop() == 2
    assert f"{spec}:5:39:" in proc.output()
