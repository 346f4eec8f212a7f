"""Liveness: never OK while monitoring nothing; WARN then ERROR + stop when inputs arrive but no frame comes out."""

from __future__ import annotations

import math

import numpy as np

from perception_safety.monitors.base import Level
from perception_safety.ros.liveness import MAX_EVENTS, Liveness

S = 1_000_000_000


def _live() -> Liveness:
    return Liveness(warn_after_ns=1 * S, error_after_ns=2 * S, started_ns=0, window_ns=4 * S)


def test_not_ok_before_the_first_frame_and_stale_without_input():
    lv = _live()
    assert lv.state(S // 2).level == Level.STALE and "no frame processed yet" in lv.state(S // 2).message
    st = lv.state(3 * S)
    assert st.level == Level.STALE and "no input yet" in st.message and not st.stop


def test_inputs_without_frames_warn_then_error_with_stop():
    lv = _live()
    # 30 Hz images and detections whose stamps never pair: inputs arrive, nothing is processed
    t = 0
    states = {}
    while t <= int(2.5 * S):
        lv.input("/cam", t)
        lv.input("/dets", t + 1000)
        states[t] = lv.state(t + 2000)
        t += S // 30
    at = {k: v for k, v in states.items()}
    first_warn = min(k for k, v in at.items() if v.level == Level.WARN)
    first_error = min(k for k, v in at.items() if v.level == Level.ERROR)
    assert S - S // 30 <= first_warn <= S + S // 30
    assert 2 * S - S // 30 <= first_error <= 2 * S + S // 30
    assert all(not v.stop for k, v in at.items() if k < first_error)
    final = at[max(at)]
    assert final.stop and "no frame processed" in final.message
    assert final.values["frames_processed"] == 0.0 and final.values["frame_rate_hz"] == 0.0
    # 30 messages/s on each topic, counted over the window (independent count: 2.5 s * 30 Hz / 2.5 s)
    assert math.isclose(final.values["input_rate_hz[/cam]"], 30.0, rel_tol=0.05)


def test_processed_frames_give_ok_and_the_rate():
    lv = _live()
    for k in range(1, 101):  # 100 frames at 20 Hz over 5 s; window 4 s -> 80 frames in it
        t = k * S // 20
        lv.input("/cam", t)
        lv.frame(t)
    st = lv.state(5 * S)
    assert st.level == Level.OK and not st.stop
    assert math.isclose(st.values["frame_rate_hz"], 20.0, rel_tol=0.02)
    # frames stop while inputs keep arriving: a frame processed resets, so WARN counts from the first orphan
    lv.input("/cam", 5 * S + 1)
    assert lv.state(6 * S).level == Level.OK
    lv.input("/cam", 6 * S + 5)
    assert lv.state(6 * S + 10).level == Level.WARN
    lv.frame(6 * S + 20)
    assert lv.state(6 * S + 30).level == Level.OK


def test_an_orphan_then_silence_is_not_an_error():
    lv = _live()
    lv.input("/cam", 0)
    lv.frame(0)
    lv.input("/cam", S // 10)  # the last image of a replay, its detections never came
    st = lv.state(5 * S)
    assert st.level == Level.STALE and "no input" in st.message and not st.stop


def test_memory_is_bounded_at_any_rate():
    lv = _live()
    for k in range(3 * MAX_EVENTS):
        lv.input("/cam", k)
        lv.frame(k)
    assert len(lv._inputs["/cam"]) == MAX_EVENTS and len(lv._frames) == MAX_EVENTS


def test_silence_while_moving_is_error_and_stop_at_standstill_stale():
    lv = _live()
    lv.input("/cam", 0)
    lv.frame(0)
    moving = lv.state(3 * S, moving="no odometry")
    assert moving.level == Level.ERROR and moving.stop and moving.silent
    assert "no input for 3.0 s" in moving.message and "(no odometry)" in moving.message
    standstill = lv.state(3 * S, moving=None)
    assert standstill.level == Level.STALE and not standstill.stop and standstill.silent


def test_error_without_a_published_stop_says_so():
    lv = _live()
    t = 0
    while t <= 3 * S:
        lv.input("/cam", t)
        t += S // 10
    off = lv.state(3 * S, stop_on_error=False)
    assert off.level == Level.ERROR and not off.stop and "no stop published" in off.message
    assert "stop requested" not in off.message and lv.state(3 * S).stop


def test_flowing_means_ok_without_stop_whatever_the_arguments():
    """`flowing` lets the node skip the full state on the steady path: wherever it holds, the state is OK with no
    stop for any detail, stop setting or motion; checked on random input/frame sequences against `state`."""
    rng = np.random.default_rng(5)
    total = 0
    for _ in range(200):
        lv = _live()
        t, flowing_seen = 0, 0
        for _ in range(40):
            t += int(rng.integers(1, S // 2))
            if rng.random() < 0.8:
                lv.input("/cam", t)
            if rng.random() < 0.5:
                lv.frame(t)
            now = t + int(rng.integers(0, int(1.5 * S)))
            if lv.flowing(now):
                flowing_seen += 1
                for args in (("", True, None), ("3 unpaired images", False, "no odometry")):
                    st = lv.state(now, *args)
                    assert st.level == Level.OK and not st.stop, (now, st)
        assert flowing_seen < 40  # the random sequences also leave the steady path
        total += flowing_seen
    assert total > 1000  # and are on it often
