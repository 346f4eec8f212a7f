"""Issue 25 item 4 over DDS: camera and detector both silent is a stop while the vehicle may be moving.

Review: both inputs silent gave STALE and no stop. Now: no odometry (or old odometry, or speed above the standstill
threshold) -> ERROR + stop requests after ``stale_timeout_s``; at a known standstill STALE and no stop.
"""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from .test_safety_monitor_failsafe import _statuses, start_monitor
from .test_safety_monitor_node import _params

pytestmark = pytest.mark.ros


def _start(ros_client, ros_tools, start_node, tmp_path, name, odometry=""):
    params = _params(tmp_path, ros_tools, name, silence={"stop": "moving", "standstill_speed_mps": 0.1})
    if odometry:
        doc = yaml.safe_load(params.read_text())
        doc[name]["ros__parameters"]["topics"]["odometry"] = odometry
        params.write_text(yaml.safe_dump(doc))
    proc, _pubs, out = start_monitor(ros_client, ros_tools, start_node, tmp_path, name, params)
    return proc, out  # then the inputs fall silent


def _liveness(out, name, level, since=0):
    return [s for s in _statuses(out, f"{name}: liveness")[since:] if s.level == level]


def test_silence_without_odometry_is_error_and_stop(ros_client, ros_tools, start_node, tmp_path):
    name = "silent_no_odom"
    proc, out = _start(ros_client, ros_tools, start_node, tmp_path, name)
    n_stop = len(out["stop"])
    assert ros_tools.wait_until(lambda: any(m.data for m in list(out["stop"])[n_stop:]), timeout=10), proc.output()
    first_stop = time.monotonic() - proc.last_sent  # the node's silence began after the last frame was sent
    assert ros_tools.wait_until(lambda: sum(m.data for m in list(out["stop"])[n_stop:]) >= 5, timeout=5)
    assert first_stop >= 0.8, first_stop  # stale_timeout_s = 0.8 s
    assert ros_tools.wait_until(lambda: _liveness(out, name, b"\x02"), timeout=5)
    err = _liveness(out, name, b"\x02")[-1]
    assert "no input for" in err.message and "no odometry configured" in err.message
    assert "stop requested" in err.message
    last = {s.name: s for s in list(out["diag"])[-1].status if s.name.startswith(name)}
    assert last[f"{name}: input"].level == b"\x02" and last[f"{name}: stop_region"].level == b"\x02"


def test_silence_at_standstill_is_stale_then_a_stop_once_the_vehicle_moves(ros_client, ros_tools, start_node,
                                                                          tmp_path):
    from nav_msgs.msg import Odometry

    from perception_safety.core.types import EgoState
    from perception_safety.ros import convert

    name = "silent_odom"
    odom_topic = f"/{name}/odom"
    pub = ros_client.publisher(Odometry, odom_topic)
    speed = [0.0]
    done = threading.Event()

    def drive():  # 20 Hz odometry
        while not done.is_set():
            pub.publish(convert.odometry_msg(EgoState(speed=speed[0]), time.time_ns()))
            time.sleep(0.05)

    feeder = threading.Thread(target=drive, daemon=True)
    feeder.start()
    try:
        proc, out = _start(ros_client, ros_tools, start_node, tmp_path, name, odometry=odom_topic)
        n_stop, n_diag = len(out["stop"]), len(_statuses(out, f"{name}: liveness"))
        assert ros_tools.wait_until(lambda: _liveness(out, name, b"\x03", n_diag), timeout=10), proc.output()
        stale = _liveness(out, name, b"\x03", n_diag)[-1]
        assert "no input for" in stale.message
        time.sleep(1.0)  # at standstill: no stop however long the silence lasts
        assert not any(m.data for m in list(out["stop"])[n_stop:])
        speed[0] = 5.0
        assert ros_tools.wait_until(lambda: any(m.data for m in list(out["stop"])[n_stop:]), timeout=10)
        assert ros_tools.wait_until(lambda: _liveness(out, name, b"\x02", n_diag), timeout=5)
        assert "ego speed 5.00 m/s" in _liveness(out, name, b"\x02", n_diag)[-1].message
    finally:
        done.set()
        feeder.join(timeout=5)
