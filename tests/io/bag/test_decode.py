"""`io.bag.decode`: the field-selective path and rosbags' path give the same frames, skips and errors, message for
message, on demo-like bags and on hostile ones (NaN boxes, empty results, negative sizes, bad levels, undecodable
bytes)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import BagReadReport, StatusRecords, decode, read_frames, write_frames
from perception_safety.io.bag.layout import CameraInfoSpec
from perception_safety.io.typestore import ros2_typestore
from perception_safety.monitors.base import Level, MonitorResult
from tests.io.bag.bag_builders import write_bag
from tests.io.bag.test_cdr_fields import (
    random_detection_array,
    random_diagnostics,
    random_monitor_statuses,
    random_odometry,
)

ROLES = [("detections", bm.DETECTIONS_TYPE, bm.detections_from_msg, random_detection_array),
         ("candidates", bm.DETECTIONS_TYPE, bm.detections_from_msg, random_detection_array),
         ("ground_truth", bm.DETECTIONS_TYPE, bm.ground_truth_from_msg, random_detection_array),
         ("ego", bm.ODOMETRY_TYPE, bm.ego_from_msg, random_odometry),
         ("monitor_results", bm.DIAGNOSTICS_TYPE, bm.monitor_results_from_msg, random_diagnostics)]


def outcome(fn):
    try:
        return "value", fn()
    except Exception as exc:
        return type(exc).__name__, str(exc)


def slow(raw, msgtype, convert):
    msg = ros2_typestore().deserialize_cdr(memoryview(raw), msgtype)
    return bm.stamp_ns_of(msg), convert(msg)


def same(a, b) -> bool:
    """Outcomes equal; NaN-free by construction where values are compared (NaN values are refused)."""
    return a == b


@pytest.mark.parametrize(("role", "msgtype", "convert", "make"), ROLES)
def test_values_skips_and_errors_equal_rosbags_path(role, msgtype, convert, make):
    """Random messages (a tenth of the numbers NaN/inf/negative, empty results, levels 0-5) and mutated bytes."""
    store = ros2_typestore()
    rng = np.random.default_rng(2)
    kinds = set()
    for trial in range(400):
        raw = bytes(store.serialize_cdr(make(rng), msgtype, little_endian=bool(trial % 3)))
        if trial % 4 == 0:
            data = bytearray(raw)
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
            raw = bytes(data[: int(rng.integers(len(data) // 2, len(data) + 1))])
        fast = outcome(lambda raw=raw: decode.decode(role, msgtype, raw, store, convert))
        want = outcome(lambda raw=raw: slow(raw, msgtype, convert))
        assert same(fast, want), (trial, fast, want)
        kinds.add(fast[0])
    assert "value" in kinds and len(kinds) >= 2  # both read values and refusals were exercised


@pytest.mark.parametrize("name", ["m", "é", "absent"])
def test_the_alarm_alone_equals_the_alarm_of_the_full_results(name):
    """`decode_alarm` (the verdict pass) against the alarm of what the rosbags path reads, errors included
    (bad levels, mutated and truncated bytes)."""
    store = ros2_typestore()
    rng = np.random.default_rng(3)
    kinds = set()
    for trial in range(400):
        raw = bytes(store.serialize_cdr(random_monitor_statuses(rng), bm.DIAGNOSTICS_TYPE,
                                        little_endian=bool(trial % 3)))
        if trial % 4 == 0:
            data = bytearray(raw)
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
            raw = bytes(data[: int(rng.integers(len(data) // 2, len(data) + 1))])
        fast = outcome(lambda raw=raw: decode.decode_alarm(bm.DIAGNOSTICS_TYPE, raw, store, name))
        want = outcome(lambda raw=raw: (lambda sv: (sv[0], bm.alarm_of(sv[1], name)))(
            slow(raw, bm.DIAGNOSTICS_TYPE, bm.monitor_results_from_msg)))
        assert same(fast, want), (trial, fast, want)
        kinds.add(fast[0] if fast[0] != "value" else ("value", fast[1][1]))
    assert {"InvalidValueError", ("value", None)} <= kinds and len(kinds) >= 3 + (name != "absent")


def _frames(n: int) -> list[Frame]:
    rng = np.random.default_rng(4)
    out = []
    for i in range(n):
        dets = tuple(Detection(Box(10.0 * k, 5.0, 10.0 * k + rng.uniform(1, 9), 20.0), "pedestrian",
                               float(rng.uniform())) for k in range(int(rng.integers(0, 4))))
        gts = tuple(GroundTruthObject.at_position(Box(3.0, 4.0, 30.0, 60.0), "pedestrian",
                                                  tuple(rng.uniform(-20, 20, 3)), f"ped{k}") for k in range(2))
        cands = tuple(Detection(Box(1.0, 1.0, 2.0, 3.0), "car", 0.1) for _ in range(int(rng.integers(0, 2))))
        out.append(Frame(1_000_000_000 + i * 50_000_000, dets, gts, EgoState(i * 0.5, 0.1, 0.01, 8.0),
                         rng.integers(0, 256, (24, 32, 3), dtype=np.uint8), candidates=cands))
    return out


def _read(bag, monkeypatch, fast: bool, alarm_of: str | None = None):
    if not fast:
        monkeypatch.setattr(decode, "FAST", {})
    report, statuses = BagReadReport(), StatusRecords(alarm_of=alarm_of)
    frames = list(read_frames(bag, report=report, statuses=statuses, with_images=False))
    monkeypatch.undo()
    return frames, report, statuses


def _same_alarms(bag, monkeypatch, name: str) -> StatusRecords:
    """The alarms read alone (fast and rosbags path) equal the alarms of the full results; returns them."""
    full = _read(bag, monkeypatch, True)[2]
    fast, slow = (_read(bag, monkeypatch, f, name)[2] for f in (True, False))
    assert fast == slow and fast.items == [] and fast.missing == full.missing
    assert fast.alarms == [(s, bm.alarm_of(r, name)) for s, r in full.items]
    return fast


def _results(i: int) -> tuple[MonitorResult, ...]:
    return (MonitorResult("contrast", bool(i % 2), Level.WARN if i % 2 else Level.OK, ("low contrast",) * (i % 2),
                          {"contrast": 0.1 * i, "ratio": 1 / 3}),
            MonitorResult("stop_region", False, Level.OK, (), {}))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_demo_like_bags_read_to_the_same_frames(tmp_path, monkeypatch, storage):
    frames = _frames(60)
    write_frames(tmp_path / "bag", frames, storage=storage, monitor_results=[_results(i) for i in range(60)],
                 camera_info=CameraInfoSpec((32, 24), (30.0, 30.0, 16.0, 12.0)), jpeg_quality=80,
                 custom_data={"perception_safety.episode": "e"})
    got, want = _read(tmp_path / "bag", monkeypatch, True), _read(tmp_path / "bag", monkeypatch, False)
    assert got[0] == want[0] and len(got[0]) == 60
    assert got[1] == want[1] and got[2] == want[2] and len(got[2].items) == 60
    assert [f.candidates for f in got[0]] == [f.candidates for f in frames]
    alarms = _same_alarms(tmp_path / "bag", monkeypatch, "contrast").alarms
    assert [a for _, a in alarms] == [bool(i % 2) for i in range(60)]
    assert {a for _, a in _same_alarms(tmp_path / "bag", monkeypatch, "absent").alarms} == {None}


def test_hostile_messages_give_the_same_skips_and_the_same_frames(tmp_path, monkeypatch):
    """A bag of bad messages among good ones: NaN and negative boxes, no results, an empty array, truncated and
    garbage bytes, a bad status level: the same frames and the same named skips (bag, topic, index, reason)."""
    store = ros2_typestore()
    good = [Detection(Box(1.0, 2.0, 3.0, 4.0), "car", 0.5)]
    msgs = []
    for i in range(12):
        t = 1_000_000_000 + i * 1_000_000
        det = bm.detections_to_msg(tuple(good), t)
        if i == 1:
            det.detections[0].bbox.size_x = math.nan
        if i == 2:
            det.detections[0].bbox.size_y = -1.0
        if i == 3:
            det.detections[0].results = []
        if i == 4:
            det.detections = []
        raw = bytes(store.serialize_cdr(det, bm.DETECTIONS_TYPE))
        if i == 5:
            raw = raw[:-20]
        if i == 6:
            raw = raw[:12] + b"\xff\xff\xff\x7f" + raw[16:]  # the frame id length far past the end
        gt = bm.ground_truth_to_msg((GroundTruthObject.at_position(Box(0, 0, 5, 5), "car", (3.0, 4.0, 0.0)),), t)
        if i == 7:
            gt.detections[0].results[0].pose.pose.position.x = math.inf
        status = bm.monitor_results_to_msg(_results(i), t)
        if i == 8:
            status.status[0].level = 7
        msgs += [("/detections", bm.DETECTIONS_TYPE, t, raw), ("/ground_truth", bm.DETECTIONS_TYPE, t, gt),
                 ("/ego/odometry", bm.ODOMETRY_TYPE, t, b"\x00\x01\x00\x00" + b"\x01" * 9 if i == 9 else
                  bm.ego_to_msg(EgoState(0, 0, 0, 1), t)),
                 ("/perception_safety/monitor_results", bm.DIAGNOSTICS_TYPE, t, status)]
    bag = write_bag(tmp_path / "bag", msgs)
    got, want = _read(bag, monkeypatch, True), _read(bag, monkeypatch, False)
    assert got[0] == want[0] and got[1] == want[1] and got[2] == want[2]
    reasons = {(s.topic, s.index) for s in got[1].skipped}
    assert {("/detections", i) for i in (1, 2, 3, 5, 6)} <= reasons and ("/ground_truth", 7) in reasons
    assert ("/ego/odometry", 9) in reasons and "level 7" in got[2].missing
    alarms = _same_alarms(bag, monkeypatch, "contrast")
    assert alarms.alarms == [] and alarms.missing == got[2].missing
    assert len(got[0]) == 7  # anchors 0, 4 (empty array: a frame without detections), 7, 8, 9, 10, 11
