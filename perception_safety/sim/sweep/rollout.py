"""What one rollout carries while it runs (its monitor, braking latch, recorded steps) and the stage timer
shared by the engine, the judge and the recorder."""

from __future__ import annotations

from dataclasses import dataclass, field

from perception_safety.core.types import Frame
from perception_safety.io.episode_log import ROLLOUTS, EpisodeStep
from perception_safety.monitors.base import MonitorResult
from perception_safety.monitors.composite import CompositeMonitor

PERCEPTION, MONITORED, GROUND_TRUTH = ROLLOUTS


@dataclass
class StageTimes:
    """Seconds spent per stage (render includes kinematics and ground truth)."""

    render: float = 0.0
    perturb: float = 0.0
    detect: float = 0.0
    monitor: float = 0.0
    record: float = 0.0
    frames: int = 0
    perturbed: int = 0

    _KEYS = ("render", "perturb", "detect", "monitor", "record", "frames", "perturbed")

    def add(self, other: StageTimes) -> None:
        for k in self._KEYS:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self._KEYS}


@dataclass
class Rollout:
    """Per-rollout state: its monitor, braking latch, recorded steps and bag frames."""

    name: str
    monitor: CompositeMonitor
    braking: bool = False
    done: bool = False
    end_reason: str = ""
    steps: list[EpisodeStep] = field(default_factory=list)
    bag_frames: list[Frame] = field(default_factory=list)
    bag_results: list[tuple[MonitorResult, ...]] = field(default_factory=list)
    bag_jpegs: list[bytes | None] = field(default_factory=list)
    collided: bool = False
    first_alarm: int | None = None
    first_stop: int | None = None
