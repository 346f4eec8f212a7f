"""Per-frame verdicts of the monitor suite over a sequence of frames, and their summary.

`judge_frames` is the loop `perception-safety monitor` runs over recorded frames: the node's own `MonitorSuite`,
the node's stop decision, regions validated whenever the camera changes (a region that does not fit is a
`RegionError`, never an empty region). `verdict_of` turns one frame's results into the record the node's
``~/monitor_results`` carries too, so online and offline verdicts are compared field by field.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.regions.resolve import RegionError, camera_in_use
from perception_safety.monitors.suite import MonitorSuite, RegionCheck, stop_requested


@dataclass(frozen=True)
class FrameVerdict:
    """One frame: worst level, stop decision, the monitors that alarmed and every reason (``monitor: reason``)."""

    stamp_ns: int
    level: Level
    stop: bool
    alarms: tuple[str, ...]
    reasons: tuple[str, ...]
    levels: tuple[tuple[str, Level], ...] = ()

    def record(self) -> dict[str, Any]:
        """The JSON line of ``verdicts.jsonl``."""
        return {"stamp_ns": self.stamp_ns, "level": self.level.name, "stop": self.stop, "alarms": list(self.alarms),
                "reasons": list(self.reasons)}


def verdict_of(stamp_ns: int, results: Sequence[MonitorResult], stop: bool, combined: str = "monitor") -> FrameVerdict:
    """The verdict of one frame from its member results, the combined m_f result (``combined``, not repeated in
    alarms and reasons) and the stop rule's: level = the worst non-STALE level (STALE when all are)."""
    own = [r for r in results if r.name != combined]
    fresh = [Level(r.level) for r in own if Level(r.level) != Level.STALE]
    level = max(fresh) if fresh else Level.STALE
    alarms = tuple(r.name for r in own if r.alarm)
    reasons = tuple(f"{r.name}: {why}" for r in own for why in r.reasons)
    return FrameVerdict(stamp_ns, level, stop, alarms, reasons, tuple((r.name, Level(r.level)) for r in own))


def judge_frames(frames: Iterable[Frame], suite: MonitorSuite, fail_safe_stop: bool = True,
                 stop_on_monitor_alarm: bool = True) -> Iterator[FrameVerdict]:
    """The suite's verdict on every frame, in order; `RegionError` (naming the regions and the image size) as soon
    as a frame's camera does not fit the configured regions."""
    check = RegionCheck(suite)
    for frame in frames:
        camera = camera_in_use(frame, suite.config.camera)
        if check.update(camera) and check.problems:
            raise RegionError("; ".join(check.problems))
        results, failed = suite.evaluate(frame)
        stop = stop_requested(results, failed, suite.runtime.name, suite.stop_name, fail_safe_stop,
                              stop_on_monitor_alarm)
        yield verdict_of(frame.stamp_ns, results, stop, suite.runtime.name)


@dataclass
class VerdictSummary:
    """Counts over frames: alarms, stops, levels, and per monitor its alarms and levels."""

    frames: int = 0
    alarm_frames: int = 0
    stops: int = 0
    levels: dict[str, int] = field(default_factory=dict)
    per_monitor: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, v: FrameVerdict) -> None:
        self.frames += 1
        self.alarm_frames += bool(v.alarms)
        self.stops += v.stop
        self.levels[v.level.name] = self.levels.get(v.level.name, 0) + 1
        for name, level in v.levels:
            row = self.per_monitor.setdefault(name, {"alarms": 0, "OK": 0, "WARN": 0, "ERROR": 0, "STALE": 0})
            row[level.name] += 1
            row["alarms"] += name in v.alarms

    def to_dict(self) -> dict[str, Any]:
        return {"frames": self.frames, "alarm_frames": self.alarm_frames, "stops": self.stops,
                "levels": dict(sorted(self.levels.items())), "per_monitor": self.per_monitor}
