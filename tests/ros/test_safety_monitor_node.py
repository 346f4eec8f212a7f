"""The installed ``safety_monitor`` executable, started with launch_ros-style arguments, fed from this process."""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.ros

W, H = 128, 72
# regions scaled to the 128x72 test images (the shipped config is for 1280x720)
WARNING = {"units": "px", "left": 27.0, "top": 47.0, "width": 73.0, "height": 25.0, "image_size": [128, 72]}
DANGER = {"units": "px", "left": 38.0, "top": 47.0, "width": 51.0, "height": 25.0, "image_size": [128, 72]}
CAM, DETS = "/test/cam", "/test/dets"


def _params(tmp_path, ros_tools, node_name="safety_monitor", **overrides):
    """The shipped config/safety_monitor.yaml (keyed by ``node_name``) with test regions and the given overrides."""
    doc = yaml.safe_load((ros_tools.root / "config" / "safety_monitor.yaml").read_text())
    doc = {node_name: doc["safety_monitor"]}
    p = doc[node_name]["ros__parameters"]
    p["monitors"]["plausibility"]["danger_region"] = {**DANGER, "image_size": [W, H]}
    p["monitors"]["plausibility"]["warning_region"] = {**WARNING, "image_size": [W, H]}
    p["monitors"]["stop_region"]["region"] = {**WARNING, "image_size": [W, H]}
    # the paper's rule alone (the shipped corridor needs a mounting and a camera model these tests do not give;
    # the refusal is tested in test_safety_monitor_regions.py)
    p["monitors"]["stop_region"] = {**{k: v for k, v in p["monitors"]["stop_region"].items() if k != "corridor"},
                                    "rule": "region"}
    p.update(stale_timeout_s=0.8, diagnostics_period_s=0.2)
    # these tests count the stops of frames; silence between them is not what they test (the default, a stop on
    # silence while the vehicle may be moving, is tested in test_safety_monitor_silence.py)
    p["silence"] = {"stop": "never"}
    p["qos"]["reliable_inputs"] = True
    for k, v in overrides.items():
        p[k] = v
    path = tmp_path / "safety_monitor.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _row_variance(rgb: np.ndarray) -> float:
    """Independent contrast statistic: 8-bit luma L = 0.299R+0.587G+0.114B, mean over rows of the row variance."""
    luma = np.floor(0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2] + 0.5).clip(0, 255)
    return float(luma.var(axis=1).mean())


def _noise(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(H, W, 3), dtype=np.uint8)


def _values(status) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


@pytest.fixture(scope="module")
def monitor(ros_client, ros_tools, tmp_path_factory):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    from std_msgs.msg import Bool
    from vision_msgs.msg import Detection2DArray

    tmp = tmp_path_factory.mktemp("safety_monitor")
    params = _params(tmp, ros_tools)
    proc = ros_tools.NodeProcess("safety_monitor", "safety_monitor", params,
                                 {"/camera/image_raw": CAM, "/detections": DETS}, tmp)
    pubs = {"image": ros_client.publisher(Image, CAM), "dets": ros_client.publisher(Detection2DArray, DETS)}
    out = {
        "results": ros_client.collect(DiagnosticArray, "/safety_monitor/monitor_results"),
        "stop": ros_client.collect(Bool, "/safety_monitor/stop_request"),
        "diag": ros_client.collect(DiagnosticArray, "/diagnostics"),
    }
    ok = ros_tools.wait_until(lambda: not proc.alive() or (all(p.get_subscription_count() > 0 for p in pubs.values())
                              and all(ros_client.node.count_publishers(t) > 0 for t in
                                       ("/safety_monitor/monitor_results", "/safety_monitor/stop_request"))),
                              timeout=30)
    assert ok and proc.alive(), proc.output()
    yield proc, pubs, out
    assert proc.alive(), proc.output()
    assert proc.stop(signal.SIGINT) == 0, proc.output()


def _send(pubs, stamp_ns, image, dets):
    from perception_safety.ros import convert

    pubs["image"].publish(convert.image_msg(image, stamp_ns))
    pubs["dets"].publish(convert.detection_array_msg(dets, stamp_ns))


def _result_for(out, stamp_ns, ros_tools):
    from perception_safety.ros.convert import stamp_to_ns

    def find():
        return next((m for m in list(out["results"]) if stamp_to_ns(m.header.stamp) == stamp_ns), None)

    assert ros_tools.wait_until(lambda: find() is not None, timeout=10), f"no result for stamp {stamp_ns}"
    return {s.name: s for s in find().status}


def test_frames_give_monitor_results_and_stop_requests(monitor, ros_tools):
    from perception_safety.core.types import Box, Detection

    _proc, pubs, out = monitor
    n_stop = len(out["stop"])
    far_person = Detection(Box(2.0, 2.0, 10.0, 20.0), "person", 0.9)
    noisy, flat = _noise(1), np.full((H, W, 3), 128, np.uint8)
    in_warning = Detection(Box(90.0, 50.0, 99.0, 70.0), "person", 0.9)  # overlaps warning, not danger

    _send(pubs, 1_000_000_000, noisy, [far_person])
    r1 = _result_for(out, 1_000_000_000, ros_tools)
    _send(pubs, 2_000_000_000, flat, [far_person])
    r2 = _result_for(out, 2_000_000_000, ros_tools)
    _send(pubs, 3_000_000_500, _noise(2), [in_warning])
    r3 = _result_for(out, 3_000_000_500, ros_tools)

    assert set(r1) == {"contrast", "plausibility", "monitor", "stop_region", "stop_request"}
    assert [_values(r["stop_request"])["alarm"] for r in (r1, r2, r3)] == ["false", "true", "true"]
    stat = float(_values(r1["contrast"])["statistic"])
    # cv2 luma rounding differs from the float formula on a few pixels: agree to 1e-5, far tighter than
    # any channel swap or corrupted buffer would give
    assert math.isclose(stat, _row_variance(noisy), rel_tol=1e-5)
    assert stat > 1580.0
    assert _values(r1["contrast"])["alarm"] == "false" and r1["contrast"].level == b"\x00"
    assert _values(r1["stop_region"])["alarm"] == "false"
    # flat grey image: zero contrast -> alarm, ERROR, and (stop_on_monitor_alarm) a stop request
    assert float(_values(r2["contrast"])["statistic"]) == 0.0
    assert _values(r2["contrast"])["alarm"] == "true" and r2["contrast"].level == b"\x02"
    assert _values(r2["monitor"])["alarm"] == "true"
    # a person box overlapping the warning region -> the stop rule fires
    assert _values(r3["stop_region"])["alarm"] == "true"
    assert float(_values(r3["stop_region"])["boxes_in_region"]) == 1.0
    assert _values(r3["plausibility"])["alarm"] == "false"
    assert ros_tools.wait_until(lambda: len(out["stop"]) >= n_stop + 3)
    assert [m.data for m in out["stop"][n_stop:n_stop + 3]] == [False, True, True]


def _bad_inputs():
    from sensor_msgs.msg import Image

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    nan_box = convert.detection_array_msg([Detection(Box(1, 1, 5, 5), "car", 0.5)], 10_000_000_000)
    nan_box.detections[0].bbox.center.position.x = float("nan")
    wrong_enc = convert.image_msg(_noise(3), 11_000_000_000)
    wrong_enc.encoding = "32FC1"
    short = convert.image_msg(_noise(4), 12_000_000_000)
    short.data = bytes(short.data)[:-7]
    return [
        ("dets", nan_box, "non-finite"),
        ("image", wrong_enc, "unsupported encoding"),
        ("image", short, "data length"),
        ("image", b"\x00\x01\x00\x00\xff", "cannot deserialize"),
    ], Image


@pytest.mark.parametrize("case", range(4))
def test_bad_input_is_reported_on_diagnostics_and_skipped(monitor, ros_tools, case):
    from perception_safety.core.types import Box, Detection

    proc, pubs, out = monitor
    cases, _ = _bad_inputs()
    which, msg, expected = cases[case]
    topic = CAM if which == "image" else DETS
    start = len(out["diag"])
    pubs[which].publish(msg)

    def reported():
        for arr in list(out["diag"])[start:]:
            for s in arr.status:
                if s.name == "safety_monitor: input" and s.level == b"\x01" and expected in s.message:
                    return s
        return None

    assert ros_tools.wait_until(lambda: reported() is not None, timeout=10), proc.output()
    status = reported()
    assert topic in status.message
    assert int(_values(status)[f"skipped[{topic}]"]) >= 1
    assert proc.alive()
    # the node still processes good frames afterwards
    stamp = 20_000_000_000 + case
    _send(pubs, stamp, _noise(5), [Detection(Box(2.0, 2.0, 10.0, 20.0), "car", 0.7)])
    assert "contrast" in _result_for(out, stamp, ros_tools)


def test_parameters_change_at_run_time_with_validation(monitor, ros_client, ros_tools):
    from perception_safety.core.types import Box, Detection

    _proc, pubs, out = monitor

    def set_param(name, value):
        return ros_tools.set_parameter(ros_client, "safety_monitor", name, value)

    bad = set_param("stale_timeout_s", -1.0)
    assert not bad.successful and "stale_timeout_s" in bad.reason and "greater than 0" in bad.reason
    ro = set_param("topics.image", "/other")
    assert not ro.successful
    assert not set_param("executor", "single_threaded").successful  # chosen at start only
    # issue 19 item 3: each of these was accepted and silently disabled the alarm / stopped processing / ate a core
    for key, value, expected in (("monitors.contrast.threshold", math.nan, "finite number"),
                                 ("monitors.contrast.threshold", -5.0, "greater than or equal to 0"),
                                 ("opencv_threads", 1_000_000, "less than or equal to 64"),
                                 ("diagnostics_period_s", 1e-9, "greater than or equal to 0.05"),
                                 ("stale_timeout_s", math.inf, "finite number")):
        refused = set_param(key, value)
        assert not refused.successful and key in refused.reason and expected in refused.reason, refused.reason
    # a low-contrast image: rows 0/1 alternating columns -> row variance 0.25 (below 1580, above 0.1)
    stripes = np.zeros((H, W, 3), np.uint8)
    stripes[:, ::2] = 1
    assert math.isclose(_row_variance(stripes), 0.25)
    far = [Detection(Box(2.0, 2.0, 10.0, 20.0), "person", 0.9)]
    _send(pubs, 30_000_000_000, stripes, far)
    assert _values(_result_for(out, 30_000_000_000, ros_tools)["contrast"])["alarm"] == "true"
    assert set_param("monitors.contrast.threshold", 0.1).successful
    _send(pubs, 31_000_000_000, stripes, far)
    after = _values(_result_for(out, 31_000_000_000, ros_tools)["contrast"])
    assert after["alarm"] == "false" and float(after["threshold"]) == 0.1
    assert set_param("monitors.contrast.threshold", 1580.0).successful


def test_no_input_turns_status_stale(monitor, ros_tools):
    _proc, _pubs, out = monitor
    start = len(out["diag"])

    def stale():
        return any(s.name == "safety_monitor: input" and s.level == b"\x03" and "no input" in s.message
                   for arr in list(out["diag"])[start:] for s in arr.status)

    assert ros_tools.wait_until(stale, timeout=10)
    last = list(out["diag"])[-1]
    assert {s.name: s.level for s in last.status}["safety_monitor: contrast"] == b"\x03"
    # the shipped params spin the node with rclpy's EventsExecutor (this rclpy has one), named on /diagnostics
    liveness = next(s for s in last.status if s.name == "safety_monitor: liveness")
    assert _values(liveness)["executor"] == "events"


def test_detections_only_mode_and_sigterm_exit_code(ros_client, ros_tools, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Bool
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.ros import convert

    # no image and no CameraInfo: the image size the regions are placed on comes from monitors.camera; spun by
    # the SingleThreadedExecutor (the other choice of `executor`)
    params = _params(tmp_path, ros_tools, "det_only_monitor", use_image=False, executor="single_threaded")
    doc = yaml.safe_load(params.read_text())
    doc["det_only_monitor"]["ros__parameters"]["monitors"]["camera"] = {"image_size": [W, H]}
    params.write_text(yaml.safe_dump(doc))
    proc = ros_tools.NodeProcess("safety_monitor", "det_only_monitor", params, {"/detections": "/test/dets_only"},
                                 tmp_path)
    pub = ros_client.publisher(Detection2DArray, "/test/dets_only")
    stops = ros_client.collect(Bool, "/det_only_monitor/stop_request")
    results = ros_client.collect(DiagnosticArray, "/det_only_monitor/monitor_results")
    assert ros_tools.wait_until(lambda: not proc.alive() or (pub.get_subscription_count() > 0
                                and ros_client.node.count_publishers("/det_only_monitor/stop_request") > 0),
                                timeout=30), proc.output()
    # empty frames until one is judged: a reader may not know a writer yet when the writer knows the reader, and
    # the first samples are then lost (failed once in a fresh clone)
    sent = iter(range(1, 1000))

    def judged() -> bool:
        pub.publish(convert.detection_array_msg([], next(sent)))
        return ros_tools.wait_until(lambda: len(results) > 0, timeout=1.0)

    assert ros_tools.wait_until(judged, timeout=30, period=0.0), proc.output()
    pub.publish(convert.detection_array_msg([Detection(Box(2.0, 2.0, 10.0, 20.0), "person", 0.9)], 1001))
    pub.publish(convert.detection_array_msg([Detection(Box(90.0, 50.0, 99.0, 70.0), "person", 0.9)], 1002))
    assert ros_tools.wait_until(lambda: any(convert.stamp_to_ns(m.header.stamp) == 1002 for m in list(results)),
                                timeout=10), proc.output()
    # the Bool follows its stamped verdict; nothing comes after frame 1002 (silence never stops here)
    assert ros_tools.wait_until(lambda: len(stops) >= 2 and stops[-1].data, timeout=5), [m.data for m in stops]
    assert [m.data for m in stops[-2:]] == [False, True]  # a stop for the frame in the region only
    assert not any(m.data for m in stops[:-1])  # the empty warm-up frames and frame 1001 do not stop
    assert "executor: single_threaded" in proc.output()
    assert proc.stop(signal.SIGTERM) == 0, proc.output()


@pytest.mark.parametrize(("params", "key"), [
    ({"sync": {"slop_s": -0.5}}, "sync.slop_s"),
    ({"monitors": {"contrast": {"threshold": math.nan}}}, "monitors.contrast.threshold"),
    ({"opencv_threads": 1_000_000}, "opencv_threads"),
])
def test_invalid_params_file_stops_node_with_key_in_message(ros_tools, tmp_path, params, key):
    doc = {"safety_monitor": {"ros__parameters": params}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = ros_tools.NodeProcess("safety_monitor", "safety_monitor", path, None, tmp_path)
    proc.proc.wait(timeout=30)
    assert proc.stop() == 2
    text = proc.output()
    assert key in text and str(path) in text and "Traceback" not in text


class _Exploding:
    """A monitor with a bug: raises on every frame."""

    name = "contrast"

    def update(self, frame):
        raise ZeroDivisionError("division by zero")

    def reset(self):
        pass


def test_a_monitor_that_raises_turns_error_and_requests_a_stop_fail_safe():
    from perception_safety.core.types import Box, Detection, Frame
    from perception_safety.monitors.base import Level
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.ros.safety_monitor_node import MonitorSuite, SafetyMonitorParams, stop_requested

    suite = MonitorSuite(MonitorsConfig())
    suite.members[0].inner = _Exploding()
    frame = Frame(stamp_ns=1, detections=(Detection(Box(0, 0, 5, 5), "car", 0.9),), image=_noise(0))
    results, failed = suite.evaluate(frame)
    by = {r.name: r for r in results}
    assert failed == {"contrast"}
    assert by["contrast"].level == Level.ERROR and by["contrast"].alarm
    assert "ZeroDivisionError" in by["contrast"].reasons[0]
    assert by["plausibility"].level == Level.OK  # the other members still ran
    names = (suite.runtime.name, suite.stop_rule.name)
    assert stop_requested(results, SafetyMonitorParams(), failed, *names)
    assert not stop_requested(results, SafetyMonitorParams(fail_safe_stop=False), failed, *names)
    # the next frame without the fault clears the failure
    suite.members[0].inner = _Quiet()
    assert suite.evaluate(frame)[1] == set()


class _Quiet:
    name = "contrast"

    def update(self, frame):
        from perception_safety.monitors.base import MonitorResult

        return MonitorResult("contrast", False)

    def reset(self):
        pass
