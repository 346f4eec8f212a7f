"""Frames the safety monitor cannot judge in full, and conflicting detection messages (issue 25 items 1-2; no rclpy).

Cannot judge is not OK. A detection message with unreadable boxes (NaN/inf, inverted, no class) is judged on its
readable boxes and is an *unjudged* frame; so is a message (or image) that cannot be read at all. Each unjudged
frame is a WARN at once; `UnjudgedGate` turns a run of them into stop requests, so one glitch is no phantom
braking but a detector that keeps emitting unreadable boxes (even on every other frame) is a stop. Two detection
messages with one stamp are a conflict: the frame is judged on both messages' boxes and the more cautious verdict
holds (`Conflicts` counts them for a WARN on /diagnostics).
"""

from __future__ import annotations

from dataclasses import dataclass

from perception_safety.core.types import Detection
from perception_safety.monitors.base import Level


@dataclass(frozen=True)
class DetectionReading:
    """What one (or several merged) detection message(s) of a frame gave: readable boxes and unreadable entries."""

    detections: tuple[Detection, ...]
    problems: tuple[str, ...] = ()
    messages: int = 1

    @property
    def unjudged(self) -> bool:
        return bool(self.problems)

    def merged(self, other: DetectionReading) -> DetectionReading:
        """Both messages' boxes and problems: the frame is judged on everything either message says."""
        return DetectionReading(self.detections + other.detections, self.problems + other.problems,
                                self.messages + other.messages)


@dataclass
class UnjudgedGate:
    """Stop requests from unjudged frames.

    A *run* starts at an unjudged frame and ends after ``frames`` consecutive frames judged in full. The gate
    requests a stop while a run is open and it holds ``frames`` unjudged frames, or once an unjudged frame has
    stayed the latest verdict for ``window_ns`` (no fully judged frame since); the stop holds until the run ends.
    So unreadable boxes on every other frame stop the car from the second one on; a single glitch followed by a
    judged frame does not.
    """

    frames: int = 2
    window_ns: int = 250_000_000
    run_count: int = 0
    clean_streak: int = 0
    streak_start_ns: int | None = None
    stopping: bool = False
    total: int = 0
    stops: int = 0
    last_problem: str = ""

    def frame(self, problems: tuple[str, ...], now_ns: int) -> bool:
        """Account one frame (``problems`` empty: judged in full); True when the gate requests a stop for it."""
        if problems:
            self.total += 1
            self.run_count += 1
            self.clean_streak = 0
            self.last_problem = problems[0] if len(problems) == 1 else f"{problems[0]} (+{len(problems) - 1} more)"
            if self.streak_start_ns is None:
                self.streak_start_ns = now_ns
        else:
            self.streak_start_ns = None
            if self.run_count:
                self.clean_streak += 1
                if self.clean_streak >= self.frames:
                    self.run_count = self.clean_streak = 0
                    self.stopping = False
        return self.tick(now_ns)

    def tick(self, now_ns: int) -> bool:
        """The time criterion (called by the node's watchdog timer too); True while the gate requests a stop."""
        if self.run_count and not self.stopping:
            late = self.streak_start_ns is not None and now_ns - self.streak_start_ns >= self.window_ns
            self.stopping = self.run_count >= self.frames or late
        return self.stopping

    def status(self) -> tuple[Level, str]:
        """``unjudged`` status on /diagnostics: ERROR while stopping, WARN while a run is open, else OK."""
        if not self.run_count:
            return Level.OK, "every box of the recent frames was read"
        what = f"{self.run_count} unjudged frame(s) in the current run; last: {self.last_problem}"
        if self.stopping:
            return Level.ERROR, f"{what}: stop requested until {self.frames} frames in a row are read in full"
        return Level.WARN, (f"{what}: a stop after {self.frames} unjudged frames or "
                            f"{self.window_ns / 1e6:g} ms without a judged frame")

    def values(self) -> dict[str, object]:
        return {"unjudged_frames_total": self.total, "unjudged_in_run": self.run_count,
                "unjudged_stops": self.stops, "stopping": self.stopping}


@dataclass
class Conflicts:
    """Detection messages that share a stamp with another one: counted, WARN until the diagnostics period ends."""

    total: int = 0
    last: str = ""
    in_period: bool = False

    def add(self, stamp_ns: int, topic: str, messages: int) -> None:
        self.total += 1
        self.last = (f"{messages} detection messages on {topic} with stamp {stamp_ns}: judged on all of their "
                     "boxes, the more cautious verdict holds")
        self.in_period = True

    def status(self) -> tuple[Level, str]:
        if self.in_period:
            return Level.WARN, f"conflicting inputs: {self.last}"
        return Level.OK, "no conflicting inputs" if not self.total else f"no conflict this period (last: {self.last})"

    def end_period(self) -> None:
        self.in_period = False


class StopLog:
    """What the node published on ``~/stop_request`` (issue 25 item 5: /diagnostics reports what is published, not
    what was intended) and the safety functions the params file switched off (a WARN while the node runs)."""

    def __init__(self, switched_off: list[str]) -> None:
        self.switched_off = switched_off
        self.last: tuple[int, bool] | None = None  # (node time, value)
        self.stops = 0

    def published(self, now_ns: int, stop: bool) -> None:
        self.last = (now_ns, stop)
        self.stops += int(stop)

    def status(self, now_ns: int) -> tuple[Level, str, dict[str, object]]:
        values: dict[str, object] = {"stops_published": self.stops,
                                     "switched_off": ", ".join(self.switched_off) or "none"}
        if self.last is None:
            level, message = Level.STALE, "nothing published yet"
        else:
            values["seconds_since_last"] = round((now_ns - self.last[0]) / 1e9, 3)
            level, message = (Level.WARN, "last published: stop") if self.last[1] else (Level.OK, "last published: "
                                                                                        "no stop")
        if self.switched_off:
            level = level if level == Level.STALE else max(level, Level.WARN)
            message += f"; switched off by the params file: {', '.join(self.switched_off)}"
        return level, message, values
