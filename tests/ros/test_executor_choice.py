"""The node's executor choice (`runner.make_executor`): rclpy's EventsExecutor where rclpy has one, the
SingleThreadedExecutor otherwise, and the kind actually made is reported."""

from __future__ import annotations

import sys
import time

import pytest

pytestmark = pytest.mark.ros


def _ticks_in(executor, node, seconds: float) -> int:
    ticks: list[float] = []
    node.create_timer(0.05, lambda: ticks.append(time.monotonic()))
    executor.add_node(node)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    executor.remove_node(node)
    return len(ticks)


def test_events_executor_is_made_and_runs_timers(ros_client):
    import rclpy

    from perception_safety.ros.runner import make_executor

    executor, kind = make_executor("events")
    node = rclpy.create_node("pstest_events_executor")
    try:
        assert kind == "events"
        assert type(executor).__name__ == "EventsExecutor"
        assert _ticks_in(executor, node, 0.6) >= 4  # a 20 Hz timer through the runner's spin_once slices
    finally:
        executor.shutdown()
        node.destroy_node()


def test_without_events_executor_the_single_threaded_one_is_made_and_named(ros_client, monkeypatch):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from perception_safety.ros.runner import make_executor

    monkeypatch.setitem(sys.modules, "rclpy.experimental", None)  # as on rclpy before Kilted: ImportError
    executor, kind = make_executor("events")
    node = rclpy.create_node("pstest_fallback_executor")
    try:
        assert isinstance(executor, SingleThreadedExecutor)
        assert kind == "single_threaded (rclpy has no EventsExecutor)"
        assert _ticks_in(executor, node, 0.6) >= 4
    finally:
        executor.shutdown()
        node.destroy_node()
    assert make_executor("single_threaded")[1] == "single_threaded"
