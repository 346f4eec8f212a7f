"""Input health: levels for bad messages and staleness."""

from __future__ import annotations

from perception_safety.monitors.base import Level
from perception_safety.ros.diagnostics import InputHealth

S = 1_000_000_000


def test_stale_before_first_input_and_after_silence():
    h = InputHealth(stale_timeout_ns=2 * S, started_ns=0)
    assert h.level_message(1 * S)[0] == Level.OK
    level, msg = h.level_message(3 * S)
    assert level == Level.STALE and "no input yet" in msg
    h.received(3 * S)
    assert h.level_message(4 * S)[0] == Level.OK
    assert h.level_message(5 * S + 1)[0] == Level.STALE


def test_stale_level_can_be_error():
    h = InputHealth(stale_timeout_ns=S, stale_level="error", started_ns=0)
    assert h.level_message(2 * S)[0] == Level.ERROR


def test_bad_message_warns_until_the_period_ends_and_is_counted():
    h = InputHealth(stale_timeout_ns=10 * S, started_ns=0)
    h.received(0)
    h.reject("/cam", "/cam: unsupported encoding '32FC1'")
    level, msg = h.level_message(S)
    assert level == Level.WARN and "32FC1" in msg
    assert h.values()["skipped[/cam]"] == 1
    h.end_period()
    assert h.level_message(S)[0] == Level.OK
    assert h.values()["skipped[/cam]"] == 1  # the count stays
