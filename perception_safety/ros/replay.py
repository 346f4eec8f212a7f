"""Publish a recorded rosbag2 bag with rclpy (no ``ros2 bag``): at the recorded rate, a multiple, or unpaced.

Messages are read with rosbags and published as their recorded CDR bytes (``Publisher.publish(bytes)``),
so header stamps and contents are exactly what was recorded. Publishers are reliable. ``rate=None`` publishes
unpaced; with a ``sync_topic`` (e.g. a monitor node's per-frame output) each group of messages sharing a
recording time waits for one message on that topic before the next group: as fast as the subscriber keeps up.
(DDS acknowledgements are no use for pacing: Fast DDS acknowledges on its 3 s heartbeat.) Every wait is bounded
by a timeout the caller sets; a group without a message on a required topic is skipped and counted.
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
    """What a replay published: messages per topic, wall time, topics nobody subscribed to, and what it skipped."""

    published: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    unsubscribed: list[str] = field(default_factory=list)
    sync_timeouts: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    """messages not published: their recording time had no message on a ``require``d topic (no counterpart)"""
    groups: int = 0
    incomplete_groups: int = 0
    total_messages: int = 0

    @property
    def total(self) -> int:
        return sum(self.published.values())

    def line(self) -> str:
        """One progress line: messages done of total, frames (message groups), skips, time."""
        done = self.total + sum(self.skipped.values())
        text = f"replay: {done}/{self.total_messages} message(s), {self.groups} group(s), {self.seconds:.1f} s"
        if self.incomplete_groups:
            text += f", {self.incomplete_groups} group(s) without a counterpart skipped"
        if self.sync_timeouts:
            text += f", {self.sync_timeouts} sync timeout(s)"
        return text


def message_class(msgtype: str, topic: str = "") -> Any:
    """``pkg/msg/Name`` -> the rclpy message class, for types of the package's type store only.

    A type name read from a bag is looked up in `ros2_typestore` first: a name it does not hold is refused
    before anything is imported (a bag must never make us import a module it names).
    """
    from perception_safety.io.typestore import ros2_typestore

    store = ros2_typestore()
    if msgtype not in store.fielddefs:
        raise ReplayError(f"{topic}: message type {msgtype!r} is not in the type store; not replayed")
    pkg, kind, name = msgtype.split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError) as exc:
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
    require: Sequence[str] = (),
    ack_timeout_s: float = 5.0,
    progress: Callable[[ReplayStats], None] | None = None,
    progress_period_s: float = 2.0,
    log: Callable[[str], None] = lambda _msg: None,
) -> ReplayStats:
    """Publish ``bag`` from ``node``; ``rate`` = multiple of the recorded rate, ``None`` = unpaced.

    Messages are published in groups sharing a recording time. A group lacking a message on one of the
    ``require``d topics (e.g. detections without their image) is skipped and counted, never waited for.
    Every wait is bounded: ``wait_subscribers_s`` for subscribers before the first message (less when discovery
    settles: 1 s without a new match after the first one), ``sync_timeout_s`` per group for one message on
    ``sync_topic``, ``ack_timeout_s`` for reliable subscribers to acknowledge the tail. ``progress`` is called
    every ``progress_period_s`` and at the end; ``log`` gets a line before each wait.
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
        present = {c.topic for c in conns}
        if topics is not None:
            missing = sorted(set(topics) - present)
            if missing:
                raise ReplayError(f"{path}: topic(s) not in the bag: {', '.join(missing)}")
        absent = sorted(set(require) - present)
        if absent:
            raise ReplayError(f"{path}: required topic(s) not replayed: {', '.join(absent)}")
        stats.total_messages = sum(int(getattr(c, "msgcount", 0)) for c in conns)
        pubs: dict[str, Any] = {}
        for c in conns:
            if c.topic not in pubs:
                pubs[c.topic] = node.create_publisher(message_class(c.msgtype, c.topic), c.topic, output_qos(100))
                stats.published[c.topic] = 0
        log(f"replay: waiting up to {wait_subscribers_s:g} s for subscribers on {len(pubs)} topic(s) "
            "(--wait-subscribers)")
        _wait_for_subscribers(pubs, wait_subscribers_s)
        stats.unsubscribed = sorted(t for t, p in pubs.items() if p.get_subscription_count() == 0)
        if sync_topic:
            log(f"replay: waiting up to {wait_subscribers_s:g} s for a publisher on {sync_topic}")
        sync = _Sync(node, sync_topic, wait_subscribers_s) if sync_topic else None
        start_wall = time.monotonic()
        last_report = start_wall
        start_bag: int | None = None
        group: list[tuple[str, bytes]] = []
        group_t: int | None = None
        required = set(require)

        def flush() -> None:
            if not group:
                return
            if required - {topic for topic, _ in group}:
                stats.incomplete_groups += 1
                for topic, _ in group:
                    stats.skipped[topic] = stats.skipped.get(topic, 0) + 1
                return
            for topic, raw in group:
                pubs[topic].publish(raw)
                stats.published[topic] += 1
            stats.groups += 1
            if sync is not None and not sync.wait_for(stats.groups, sync_timeout_s):
                stats.sync_timeouts += 1
                sync.count = stats.groups  # a late answer must not be taken for the next group's

        for conn, t_bag, raw in reader.messages(connections=conns):
            if should_stop():
                break
            if t_bag != group_t:
                flush()
                group, group_t = [], t_bag
                if rate is not None:
                    start_bag = t_bag if start_bag is None else start_bag
                    due = start_wall + (t_bag - start_bag) / 1e9 / rate
                    delay = due - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                now = time.monotonic()
                if progress is not None and now - last_report >= progress_period_s:
                    stats.seconds, last_report = now - start_wall, now
                    progress(stats)
            group.append((conn.topic, bytes(raw)))
        if not should_stop():
            flush()
        stats.seconds = time.monotonic() - start_wall
        # unsynced: let reliable subscribers receive the tail before the publishers go away
        if sync is None and any(p.get_subscription_count() for p in pubs.values()):
            log(f"replay: waiting up to {ack_timeout_s:g} s for subscribers to acknowledge (--ack-timeout)")
            for pub in pubs.values():
                if pub.get_subscription_count():
                    pub.wait_for_all_acked(Duration(seconds=ack_timeout_s))
        if progress is not None:
            progress(stats)
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
