"""The monitor interface shared by every runtime monitor, online (ROS nodes) and offline (replay, episodes)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from perception_safety.core.types import Frame


class Level(enum.IntEnum):
    """Status level, numerically equal to diagnostic_msgs/DiagnosticStatus OK/WARN/ERROR/STALE."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True)
class MonitorResult:
    """One monitor's verdict on one frame: alarm flag, status level, reasons and numeric values."""

    name: str
    alarm: bool
    level: Level = Level.OK
    reasons: tuple[str, ...] = ()
    values: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class Monitor(Protocol):
    """A pure, deterministic monitor: feed frames in order, get one result per frame."""

    name: str

    def update(self, frame: Frame) -> MonitorResult:
        """Judge one frame (and advance any internal track state)."""
        ...

    def reset(self) -> None:
        """Forget all state, as at the start of a new episode or bag."""
        ...
