"""Composite monitor: several monitors on the same frame, alarm when any alarms (the paper's m_f, Section III-B).

`CompositeMonitor.evaluate` gives the combined verdict and every member's own result (for one
diagnostic status per monitor); `update` returns only the combined `MonitorResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level, Monitor, MonitorResult
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.contrast import ContrastMonitor
from perception_safety.monitors.plausibility import PlausibilityMonitor
from perception_safety.monitors.stop_region import StopRegionMonitor


@dataclass(frozen=True)
class CompositeResult:
    """The combined verdict and each member's result, in member order."""

    combined: MonitorResult
    parts: tuple[MonitorResult, ...]

    def part(self, name: str) -> MonitorResult:
        """The member result called ``name`` (KeyError if absent)."""
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)


class CompositeMonitor:
    """Runs its members in order on every frame; alarm = OR, level = worst non-STALE level (STALE if all are)."""

    def __init__(self, monitors: Sequence[Monitor], name: str = "monitor") -> None:
        names = [m.name for m in monitors]
        if len(set(names)) != len(names):
            raise ValueError(f"composite monitor: duplicate member names {names}")
        self.monitors = tuple(monitors)
        self.name = name

    def evaluate(self, frame: Frame) -> CompositeResult:
        """Every member's result and the combination; reasons and values are prefixed ``member:`` / ``member.``."""
        parts = tuple(m.update(frame) for m in self.monitors)
        alarm = any(p.alarm for p in parts)
        fresh = [p.level for p in parts if p.level != Level.STALE]
        level = max(fresh) if fresh else (Level.STALE if parts else Level.OK)
        reasons = tuple(f"{p.name}: {r}" for p in parts for r in p.reasons)
        values = {f"{p.name}.{k}": float(v) for p in parts for k, v in p.values.items()}
        values.update({f"{p.name}.alarm": float(p.alarm) for p in parts})
        return CompositeResult(MonitorResult(self.name, alarm, level, reasons, values), parts)

    def update(self, frame: Frame) -> MonitorResult:
        """The combined verdict for one frame."""
        return self.evaluate(frame).combined

    def reset(self) -> None:
        """Reset every member."""
        for m in self.monitors:
            m.reset()


def build_runtime_monitor(config: MonitorsConfig | None = None, name: str = "monitor") -> CompositeMonitor:
    """The runtime monitor m_f of the paper's use case: the enabled contrast and plausibility monitors."""
    config = config or MonitorsConfig()
    members: list[Monitor] = []
    if config.contrast.enabled:
        members.append(ContrastMonitor(config.contrast))
    if config.plausibility.enabled:
        members.append(PlausibilityMonitor(config.plausibility, config.camera))
    return CompositeMonitor(members, name)


def build_stop_rule(config: MonitorsConfig | None = None) -> StopRegionMonitor:
    """The emergency-braking rule (not part of m_f: it is the planner the monitor protects)."""
    config = config or MonitorsConfig()
    return StopRegionMonitor(config.stop_region, config.camera)
