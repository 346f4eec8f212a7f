"""Liveness of a monitor node: is it *processing* frames, not just receiving messages? (no rclpy)

Issue 19 item 1: at 1080p on Fast DDS's built-in transports the safety monitor processed 0 of 601 frames in
20 s while /diagnostics said OK ("receiving"), and the same with image/detection stamps that never pair.
`Liveness` watches input arrivals (per topic) and processed frames. When inputs keep arriving but no frame was
processed for ``warn_after`` it is WARN, after ``error_after`` ERROR with a stop request; when nothing arrives
at all (silence, issue 25 item 4) it is ERROR with a stop request while the vehicle may be moving (the caller says
why: no odometry, speed above the standstill threshold), else the node's stale level. It never says
OK before the first frame was processed. Rates (processed frames and arrivals per topic) are counted over a
sliding ``window`` of at most `MAX_EVENTS` events per stream, so memory stays bounded at any input rate.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from perception_safety.monitors.base import Level

#: events remembered per stream for the rate estimate (bounds memory at any message rate)
MAX_EVENTS = 4096


@dataclass(frozen=True)
class LivenessState:
    """What /diagnostics shows: level, message, whether a stop is requested, and numeric values."""

    level: Level
    message: str
    stop: bool
    values: dict[str, float]
    silent: bool = False


def _rate(events: deque[int], now_ns: int, window_ns: int, since_ns: int) -> float:
    """Events per second within the last ``window_ns`` (or since ``since_ns`` if that is shorter)."""
    lo = now_ns - window_ns
    n = sum(1 for t in events if t > lo)
    span = min(window_ns, max(now_ns - since_ns, 1))
    return n * 1e9 / span


@dataclass
class Liveness:
    """Arrivals and processed frames of a node; `state` gives the liveness status at a time (node clock, ns)."""

    warn_after_ns: int
    error_after_ns: int
    started_ns: int = 0
    window_ns: int = 5_000_000_000
    stale_level: Level = Level.STALE
    frames: int = 0
    last_input_ns: int | None = None
    last_frame_ns: int | None = None
    #: first input that arrived after the last processed frame (None: every input so far led to a frame)
    pending_since_ns: int | None = None
    _inputs: dict[str, deque[int]] = field(default_factory=dict)
    _frames: deque[int] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))

    def input(self, topic: str, now_ns: int) -> None:
        """A message arrived on ``topic`` (good or bad: what matters is whether frames come out)."""
        self.last_input_ns = now_ns
        if self.pending_since_ns is None:
            self.pending_since_ns = now_ns
        self._inputs.setdefault(topic, deque(maxlen=MAX_EVENTS)).append(now_ns)

    def frame(self, now_ns: int) -> None:
        """A frame was processed (monitor results published)."""
        self.frames += 1
        self.last_frame_ns = now_ns
        self.pending_since_ns = None
        self._frames.append(now_ns)

    def flowing(self, now_ns: int) -> bool:
        """Inputs arrive and frames come out: `state` at ``now_ns`` is OK without a stop, whatever its arguments.

        The node's input callbacks check this cheap condition first and skip the full `state` (message text,
        detail string) on the steady path of every frame."""
        return (self.last_frame_ns is not None and self.last_input_ns is not None
                and now_ns - self.last_input_ns <= self.warn_after_ns
                and (self.pending_since_ns is None or now_ns - self.pending_since_ns <= self.warn_after_ns))

    def rates(self, now_ns: int) -> dict[str, float]:
        """Processed frames per second and arrivals per second of each input topic."""
        out = {"frame_rate_hz": _rate(self._frames, now_ns, self.window_ns, self.started_ns)}
        for topic, events in sorted(self._inputs.items()):
            out[f"input_rate_hz[{topic}]"] = _rate(events, now_ns, self.window_ns, self.started_ns)
        return out

    def state(self, now_ns: int, detail: str = "", stop_on_error: bool = True,
              moving: str | None = None, with_rates: bool = True) -> LivenessState:
        """The status at ``now_ns``; ``detail`` (e.g. unpaired/skipped counts) is appended to a WARN/ERROR message.

        ``stop_on_error``: whether the node publishes the stop of an ERROR (the message says what is published);
        ``moving``: why the vehicle may be moving (None: at standstill, or silence is not a stop);
        ``with_rates=False`` skips the rate values (the node's 50 ms watchdog needs only level and stop).
        """
        values: dict[str, float] = {"frames_processed": float(self.frames)}
        if with_rates:
            values.update(self.rates(now_ns))
        since_frame = None if self.last_frame_ns is None else (now_ns - self.last_frame_ns) / 1e9
        if since_frame is not None:
            values["seconds_since_last_frame"] = round(since_frame, 3)
        arriving = self.last_input_ns is not None and now_ns - self.last_input_ns <= self.warn_after_ns
        pending = 0 if self.pending_since_ns is None else now_ns - self.pending_since_ns
        suffix = f" ({detail})" if detail else ""
        if arriving and pending > self.error_after_ns:
            action = "stop requested" if stop_on_error else "no stop published (liveness.stop_on_error: false)"
            return LivenessState(Level.ERROR, f"inputs arrive but no frame processed for {pending / 1e9:.1f} s "
                                 f"(error after {self.error_after_ns / 1e9:g} s): {action}{suffix}",
                                 stop_on_error, values)
        if arriving and pending > self.warn_after_ns:
            return LivenessState(Level.WARN, f"inputs arrive but no frame processed for {pending / 1e9:.1f} s "
                                 f"(warn after {self.warn_after_ns / 1e9:g} s){suffix}", False, values)
        if not arriving:
            ref = self.started_ns if self.last_input_ns is None else self.last_input_ns
            if now_ns - ref > self.warn_after_ns:
                what = "no input yet" if self.last_input_ns is None else "no input"
                text = f"{what} for {(now_ns - ref) / 1e9:.1f} s: monitoring nothing"
                if moving is not None:
                    return LivenessState(Level.ERROR, f"{text} while the vehicle may be moving ({moving}): "
                                         "stop requested", True, values, silent=True)
                return LivenessState(self.stale_level, text, False, values, silent=True)
        if self.last_frame_ns is None:
            return LivenessState(Level.STALE, "no frame processed yet", False, values)
        rate = values.get("frame_rate_hz")
        return LivenessState(Level.OK, "processing frames" if rate is None else f"processing {rate:.1f} frames/s",
                             False, values)


class EgoMotion:
    """Whether the vehicle may be moving (issue 25 item 4: then silence is a stop), from the ego odometry.

    ``silence`` is the node's ``silence`` parameter section (``stop``, ``standstill_speed_mps``,
    ``odometry_timeout_s``); without odometry, or with old odometry, the vehicle is taken as moving.
    """

    def __init__(self, silence: Any, has_odometry: bool) -> None:
        self.silence = silence
        self.has_odometry = has_odometry
        self.last: tuple[int, float] | None = None  # (node time received, speed m/s)

    def odometry(self, now_ns: int, speed: float) -> None:
        if not math.isfinite(speed):
            raise ValueError(f"non-finite speed {speed}")
        self.last = (now_ns, speed)

    def moving(self, now_ns: int) -> str | None:
        """Why the vehicle may be moving, or None at a known standstill (or when silence is never a stop)."""
        s = self.silence
        if s.stop != "moving":
            return "silence.stop: always" if s.stop == "always" else None
        if self.last is None:
            return "no odometry" + ("" if self.has_odometry else " configured")
        age = (now_ns - self.last[0]) / 1e9
        if age > s.odometry_timeout_s:
            return f"odometry {age:.1f} s old"
        if abs(self.last[1]) > s.standstill_speed_mps:
            return f"ego speed {self.last[1]:.2f} m/s"
        return None
