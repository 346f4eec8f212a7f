"""Publish a recorded rosbag2 bag with rclpy (no ``ros2 bag``): at the recorded rate, a multiple, or unpaced.

Messages are read with rosbags and published as their recorded CDR bytes (``Publisher.publish(bytes)``),
so header stamps and contents are exactly what was recorded. Publishers are reliable. ``rate=None`` publishes
unpaced; with a ``sync_topic`` (e.g. a monitor node's per-frame output) each group of messages sharing a
recording time waits for one message on that topic before the next group: as fast as the subscriber keeps up.
(DDS acknowledgements are no use for pacing: Fast DDS acknowledges on its 3 s heartbeat.)
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rclpy.duration import Duration
from rosbags.rosbag2 import Reader

from perception_safety.errors import PerceptionSafetyError


class ReplayError(PerceptionSafetyError):
    """The bag cannot be replayed (unreadable, unknown topic, message type not importable)."""


@dataclass
class ReplayStats:
    """What a replay published: messages per topic, wall time, and topics nobody subscribed to."""

    published: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    unsubscribed: list[str] = field(default_factory=list)
    sync_timeouts: int = 0

    @property
    def total(self) -> int:
        return sum(self.published.values())


def message_class(msgtype: str, topic: str = "") -> Any:
    """``pkg/msg/Name`` -> the rclpy message class (the package's Python bindings must be installed)."""
    try:
        pkg, kind, name = msgtype.split("/")
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ValueError, ImportError, AttributeError) as exc:
        raise ReplayError(f"{topic}: message type {msgtype!r} is not available to rclpy: {exc}") from exc


def replay_bag(
    node: Any,
    bag: str | Path,
    rate: float | None = 1.0,
    topics: Sequence[str] | None = None,
    wait_subscribers_s: float = 5.0,
    sync_topic: str | None = None,
    sync_timeout_s: float = 5.0,
    should_stop: Callable[[], bool] = lambda: False,
) -> ReplayStats:
    """Publish ``bag`` from ``node``; ``rate`` = multiple of the recorded rate, ``None`` = unpaced.

    Waits up to ``wait_subscribers_s`` for every topic to have a subscriber before the first message (less when
    discovery settles: 1 s without a new match after the first one).
    With ``sync_topic``, each message group waits (up to ``sync_timeout_s``) for one message on it.
    """
    from perception_safety.ros.qos import output_qos

    if rate is not None and not rate > 0:
        raise ReplayError(f"rate must be > 0, got {rate}")
    path = Path(bag)
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:
        raise ReplayError(f"{path}: cannot open bag: {exc}") from exc
    stats = ReplayStats()
    try:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        if topics is not None:
            missing = sorted(set(topics) - {c.topic for c in conns})
            if missing:
                raise ReplayError(f"{path}: topic(s) not in the bag: {', '.join(missing)}")
        pubs: dict[str, Any] = {}
        for c in conns:
            if c.topic not in pubs:
                pubs[c.topic] = node.create_publisher(message_class(c.msgtype, c.topic), c.topic, output_qos(100))
                stats.published[c.topic] = 0
        _wait_for_subscribers(pubs, wait_subscribers_s)
        stats.unsubscribed = sorted(t for t, p in pubs.items() if p.get_subscription_count() == 0)
        sync = _Sync(node, sync_topic, wait_subscribers_s) if sync_topic else None
        start_wall = time.monotonic()
        start_bag: int | None = None
        groups = 0
        last_t: int | None = None
        for conn, t_bag, raw in reader.messages(connections=conns):
            if should_stop():
                break
            if sync is not None and last_t is not None and t_bag != last_t:
                groups += 1
                if not sync.wait_for(groups, sync_timeout_s):
                    stats.sync_timeouts += 1
            last_t = t_bag
            if rate is not None:
                start_bag = t_bag if start_bag is None else start_bag
                due = start_wall + (t_bag - start_bag) / 1e9 / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            pubs[conn.topic].publish(bytes(raw))
            stats.published[conn.topic] += 1
        if sync is not None and last_t is not None and not sync.wait_for(groups + 1, sync_timeout_s):
            stats.sync_timeouts += 1
        stats.seconds = time.monotonic() - start_wall
        # unsynced: let reliable subscribers receive the tail before the publishers go away
        for pub in pubs.values() if sync is None else ():
            if pub.get_subscription_count():
                pub.wait_for_all_acked(Duration(seconds=5))
    finally:
        reader.close()
    return stats


def _wait_for_subscribers(pubs: dict[str, Any], timeout_s: float, settle_s: float = 1.0) -> None:
    """Until every topic has a subscriber, or ``timeout_s``, or ``settle_s`` without a new match after the first."""
    deadline = time.monotonic() + timeout_s
    matched, changed = 0, time.monotonic()
    while time.monotonic() < deadline:
        n = sum(1 for p in pubs.values() if p.get_subscription_count())
        if n == len(pubs):
            return
        if n != matched:
            matched, changed = n, time.monotonic()
        elif matched and time.monotonic() - changed > settle_s:
            return  # discovery has settled; the remaining topics have no subscriber
        time.sleep(0.02)


class _Sync:
    """Counts messages on the feedback topic (its type looked up in the graph)."""

    def __init__(self, node: Any, topic: str, wait_s: float) -> None:
        self.node, self.topic, self.count = node, node.resolve_topic_name(topic), 0
        deadline = time.monotonic() + wait_s
        types: list[str] = []
        while time.monotonic() < deadline:
            types = dict(node.get_topic_names_and_types()).get(self.topic, [])
            if types:
                break
            time.sleep(0.05)
        if not types:
            raise ReplayError(f"sync topic {self.topic}: no publisher found within {wait_s:g} s")
        from perception_safety.ros.qos import output_qos

        node.create_subscription(message_class(types[0], self.topic), self.topic, self._cb, output_qos(1000),
                                 raw=True)
        from rclpy.executors import SingleThreadedExecutor

        self.executor = SingleThreadedExecutor(context=node.context)
        self.executor.add_node(node)

    def _cb(self, _raw: bytes) -> None:
        self.count += 1

    def wait_for(self, n: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.count < n and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)
        return self.count >= n
