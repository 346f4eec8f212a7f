"""Input health of a node for ``/diagnostics``: frame counts, skipped bad messages, staleness (no rclpy)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from perception_safety.monitors.base import Level


@dataclass
class InputHealth:
    """Tracks what arrived on a node's inputs; ``stale_timeout_ns`` without input makes it stale.

    Times are the node clock in integer nanoseconds. A bad message is reported (WARN) until the
    next `end_period` call; staleness is reported as ``stale_level`` (STALE or ERROR).
    """

    stale_timeout_ns: int
    stale_level: Literal["stale", "error"] = "stale"
    started_ns: int = 0
    last_input_ns: int | None = None
    frames: int = 0
    bad: Counter[str] = field(default_factory=Counter)
    last_error: str = ""
    _bad_in_period: bool = False

    def received(self, now_ns: int) -> None:
        self.last_input_ns = now_ns

    def processed(self) -> None:
        self.frames += 1

    def reject(self, topic: str, reason: str) -> None:
        """Count a skipped bad message on ``topic``; ``reason`` names the field."""
        self.bad[topic] += 1
        self.last_error = reason
        self._bad_in_period = True

    def is_stale(self, now_ns: int) -> bool:
        ref = self.started_ns if self.last_input_ns is None else self.last_input_ns
        return now_ns - ref > self.stale_timeout_ns

    @property
    def stale_as(self) -> Level:
        return Level.ERROR if self.stale_level == "error" else Level.STALE

    def level_message(self, now_ns: int) -> tuple[Level, str]:
        """Current level and message: staleness first, then a bad message seen this period, else OK."""
        if self.is_stale(now_ns):
            ref = self.started_ns if self.last_input_ns is None else self.last_input_ns
            what = "no input yet" if self.last_input_ns is None else "no input"
            return self.stale_as, f"{what} for {(now_ns - ref) / 1e9:.1f} s (timeout {self.stale_timeout_ns / 1e9:g} s)"
        if self._bad_in_period:
            return Level.WARN, f"skipped bad message: {self.last_error}"
        return Level.OK, "receiving"

    def values(self) -> dict[str, object]:
        out: dict[str, object] = {"frames": self.frames}
        out.update({f"skipped[{topic}]": n for topic, n in sorted(self.bad.items())})
        if self.last_error:
            out["last_error"] = self.last_error
        return out

    def end_period(self) -> None:
        self._bad_in_period = False
