"""`UnjudgedGate` and `DetectionReading` (issue 25 item 1): unjudged frames become stops after a run, not at once."""

from __future__ import annotations

from perception_safety.core.types import Box, Detection
from perception_safety.monitors.base import Level
from perception_safety.ros.judgement import Conflicts, DetectionReading, UnjudgedGate

MS = 1_000_000
BAD = ("detections[0]: non-finite box",)


def _run(gate: UnjudgedGate, pattern: str, period_ms: int = 33) -> list[bool]:
    """Feed frames ``U`` (unjudged) / ``J`` (judged in full) every ``period_ms``; the gate's stop per frame."""
    return [gate.frame(BAD if c == "U" else (), k * period_ms * MS) for k, c in enumerate(pattern)]


def test_one_glitch_is_no_stop_and_the_run_ends_after_judged_frames():
    gate = UnjudgedGate(frames=2, window_ns=250 * MS)
    assert _run(gate, "UJJUJJ") == [False] * 6
    assert gate.total == 2 and gate.run_count == 0 and gate.status()[0] == Level.OK


def test_every_other_frame_unjudged_stops_from_the_second_and_holds():
    gate = UnjudgedGate(frames=2, window_ns=250 * MS)
    assert _run(gate, "UJUJU") == [False, False, True, True, True]
    level, message = gate.status()
    assert level == Level.ERROR and "stop requested" in message and "non-finite" in message
    assert _run(gate, "JJ") == [True, False]  # released after 2 judged frames in a row
    assert gate.status()[0] == Level.OK


def test_consecutive_unjudged_frames_stop_at_the_configured_count():
    gate = UnjudgedGate(frames=3, window_ns=10_000 * MS)
    assert _run(gate, "UUU") == [False, False, True]
    gate = UnjudgedGate(frames=1, window_ns=10_000 * MS)
    assert _run(gate, "U") == [True]


def test_an_unjudged_frame_not_followed_by_a_judged_one_stops_after_the_window():
    gate = UnjudgedGate(frames=2, window_ns=250 * MS)
    assert gate.frame(BAD, 0) is False
    assert gate.status()[0] == Level.WARN
    assert gate.tick(249 * MS) is False
    assert gate.tick(250 * MS) is True
    gate = UnjudgedGate(frames=2, window_ns=250 * MS)
    gate.frame(BAD, 0)
    gate.frame((), 30 * MS)  # a judged frame came in time: the window no longer runs
    assert gate.tick(400 * MS) is False


def test_reading_merges_boxes_problems_and_message_count():
    a = DetectionReading((Detection(Box(0, 0, 1, 1), "person", 0.5),))
    b = DetectionReading((), ("detections[0]: negative box size",))
    m = a.merged(b)
    assert m.detections == a.detections and m.problems == b.problems and m.messages == 2 and m.unjudged
    assert not a.unjudged


def test_conflicts_warn_for_one_period():
    c = Conflicts()
    assert c.status()[0] == Level.OK
    c.add(42, "/dets", 2)
    level, message = c.status()
    assert level == Level.WARN and "42" in message and "/dets" in message
    c.end_period()
    assert c.status()[0] == Level.OK and c.total == 1
