"""Pairing of two message streams by header stamp, exact or approximate within a slop (no rclpy)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

A = TypeVar("A")
B = TypeVar("B")


@dataclass
class PairStats:
    """Counters of a `StampPairer`: pairs emitted and messages dropped unpaired per stream."""

    pairs: int = 0
    dropped_first: int = 0
    dropped_second: int = 0
    merged_second: int = 0


@dataclass
class StampPairer(Generic[A, B]):
    """Pairs ``first`` (e.g. images) with ``second`` (e.g. detections) messages by stamp.

    ``slop_ns = 0`` pairs exact stamps only; otherwise the closest stamp of the other stream within
    ``slop_ns`` is taken. Unpaired messages older than a pair can no longer pair and are dropped; each
    queue keeps at most ``queue_size`` messages (the oldest is dropped first). With ``merge``, a ``second``
    message whose stamp equals a waiting one's is merged into it (``merge(stamp_ns, waiting, new)``, counted in
    ``merged_second``) instead of waiting beside it and being dropped.
    """

    slop_ns: int = 0
    queue_size: int = 10
    merge: Callable[[int, B, B], B] | None = None
    stats: PairStats = field(default_factory=PairStats)
    _first: deque[tuple[int, Any]] = field(default_factory=deque, repr=False)
    _second: deque[tuple[int, Any]] = field(default_factory=deque, repr=False)

    def add_first(self, stamp_ns: int, item: A) -> tuple[int, A, B] | None:
        """Offer a ``first``-stream message; returns ``(stamp_ns, first, second)`` when it completes a pair."""
        match = self._take(self._second, stamp_ns, second=True)
        if match is None:
            self._push(self._first, stamp_ns, item, second=False)
            return None
        self.stats.pairs += 1
        self._drop_older(self._first, stamp_ns, second=False)
        return stamp_ns, item, match

    def add_second(self, stamp_ns: int, item: B) -> tuple[int, A, B] | None:
        """Offer a ``second``-stream message; the pair's stamp is the ``first`` message's stamp."""
        found = self._find(self._first, stamp_ns)
        if found is None:
            same = next((i for i, e in enumerate(self._second) if e[0] == stamp_ns), None)
            if same is not None and self.merge is not None:
                self._second[same] = (stamp_ns, self.merge(stamp_ns, self._second[same][1], item))
                self.stats.merged_second += 1
                return None
            self._push(self._second, stamp_ns, item, second=True)
            return None
        first_stamp, first_item = found
        self._remove(self._first, found, second=False)
        self.stats.pairs += 1
        self._drop_older(self._second, stamp_ns, second=True)
        return first_stamp, first_item, item

    def pending(self) -> tuple[int, int]:
        """Numbers of messages waiting in the first and second queues."""
        return len(self._first), len(self._second)

    def clear(self) -> None:
        self._first.clear()
        self._second.clear()

    def _find(self, queue: deque[tuple[int, Any]], stamp_ns: int) -> tuple[int, Any] | None:
        best: tuple[int, Any] | None = None
        best_gap = self.slop_ns + 1
        for entry in queue:
            gap = abs(entry[0] - stamp_ns)
            if gap < best_gap:
                best, best_gap = entry, gap
        return best

    def _take(self, queue: deque[tuple[int, Any]], stamp_ns: int, second: bool) -> Any | None:
        found = self._find(queue, stamp_ns)
        if found is None:
            return None
        self._remove(queue, found, second)
        return found[1]

    def _remove(self, queue: deque[tuple[int, Any]], entry: tuple[int, Any], second: bool) -> None:
        # everything that arrived before the matched entry is older and can no longer pair
        while queue:
            head = queue.popleft()
            if head is entry:
                return
            self._count_drop(second)

    def _drop_older(self, queue: deque[tuple[int, Any]], stamp_ns: int, second: bool) -> None:
        while queue and queue[0][0] < stamp_ns - self.slop_ns:
            queue.popleft()
            self._count_drop(second)

    def _push(self, queue: deque[tuple[int, Any]], stamp_ns: int, item: Any, second: bool) -> None:
        queue.append((stamp_ns, item))
        while len(queue) > self.queue_size:
            queue.popleft()
            self._count_drop(second)

    def _count_drop(self, second: bool) -> None:
        if second:
            self.stats.dropped_second += 1
        else:
            self.stats.dropped_first += 1
