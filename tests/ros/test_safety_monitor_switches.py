"""Issue 25 item 5 over DDS: nobody else switches safety off.

Review: any DDS participant could disable every safety function through the parameter service, after which
/diagnostics still said "stop requested" while no stop was published; ``monitors.stop_region.enabled: false`` was
accepted and never read. Now: the switches are read-only at run time, a switch set off in the params file is used
and reported on /diagnostics, a parameter the node cannot honour is refused at start.
"""

from __future__ import annotations

import signal

import pytest
import yaml

from .test_safety_monitor_failsafe import _dets, _image, _statuses, _stop_status, start_monitor
from .test_safety_monitor_node import _params, _values

pytestmark = pytest.mark.ros

SWITCHES = [("fail_safe_stop", False), ("stop_on_monitor_alarm", False), ("liveness.stop_on_error", False),
            ("monitors.contrast.enabled", False), ("monitors.plausibility.enabled", False),
            ("monitors.stop_region.enabled", True), ("monitors.stop_region.source", "ground_truth"),
            ("silence.stop", "never"), ("unjudged_frames", 1000), ("unjudged_ms", 3_600_000.0)]


def test_switches_are_read_only_and_a_switched_off_rule_is_used_and_reported(ros_client, ros_tools, start_node,
                                                                           tmp_path):
    from perception_safety.ros import convert

    name = "switches"
    params = _params(tmp_path, ros_tools, name)
    doc = yaml.safe_load(params.read_text())
    doc[name]["ros__parameters"]["monitors"]["stop_region"]["enabled"] = False
    params.write_text(yaml.safe_dump(doc))
    proc, pubs, out = start_monitor(ros_client, ros_tools, start_node, tmp_path, name, params)

    for key, value in SWITCHES:  # what a hostile participant tried: every one refused, nothing changed
        res = ros_tools.set_parameter(ros_client, name, key, value)
        assert not res.successful and "read-only" in res.reason, (key, res.reason)
    # a frame the stop rule would stop on (a person in its region, not in the danger region: no ghost alarm):
    # the rule is off, as the params file says, so no stop, and no stop_region result pretends otherwise
    stamp = 9_000_000_000
    pubs["image"].publish(convert.image_msg(_image(4), stamp))
    pubs["dets"].publish(_dets(stamp, ("person", (90.0, 50.0, 99.0, 70.0), "")))
    assert ros_tools.wait_until(lambda: _stop_status(out, stamp), timeout=10), proc.output()
    (arr,) = [m for m in list(out["results"]) if convert.stamp_to_ns(m.header.stamp) == stamp]
    assert [s.name for s in arr.status] == ["contrast", "plausibility", "monitor", "stop_request"]
    assert _values(_stop_status(out, stamp)[0])["alarm"] == "false"
    # /diagnostics: what was published, and that the params file switched the rule off (WARN)
    assert ros_tools.wait_until(lambda: any("last published: no stop" in s.message
                                            for s in _statuses(out, f"{name}: stop_request")), timeout=5)
    st = [s for s in _statuses(out, f"{name}: stop_request") if "last published: no stop" in s.message][-1]
    assert st.level == b"\x01" and "monitors.stop_region.enabled: false" in st.message
    assert int(_values(st)["stops_published"]) == 0
    assert "safety functions switched off by the params file" in proc.output()
    assert proc.stop(signal.SIGINT) == 0, proc.output()


def test_a_stop_rule_that_cannot_be_judged_online_is_refused_at_start(ros_tools, start_node, tmp_path):
    path = tmp_path / "gt.yaml"
    path.write_text(yaml.safe_dump({"safety_monitor": {"ros__parameters": {
        "monitors": {"stop_region": {"source": "ground_truth"}}}}}))
    proc = start_node("safety_monitor", "safety_monitor", path, None, tmp_path)
    proc.proc.wait(timeout=30)
    assert proc.stop() == 2
    text = proc.output()
    assert "monitors.stop_region.source" in text and "no ground truth" in text and "Traceback" not in text
