"""The safety monitor's monitors, fail-safe: m_f (contrast + plausibility) and the stop-region rule (no rclpy)."""

from __future__ import annotations

from dataclasses import replace

from perception_safety.core.types import Frame
from perception_safety.io.config import ConfigError
from perception_safety.monitors.base import Level, Monitor, MonitorResult
from perception_safety.monitors.composite import CompositeMonitor, build_runtime_monitor, build_stop_rule
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.ros.safety_monitor_params import SafetyMonitorParams


class Guarded:
    """Fail-safe wrapper: a member monitor that raises yields an ERROR result (alarm) instead of propagating."""

    def __init__(self, monitor: Monitor) -> None:
        self.inner = monitor
        self.name = monitor.name
        self.failed = False

    def update(self, frame: Frame) -> MonitorResult:
        try:
            self.failed = False
            return self.inner.update(frame)
        except Exception as exc:
            self.failed = True
            return MonitorResult(self.name, alarm=True, level=Level.ERROR,
                                 reasons=(f"monitor raised {type(exc).__name__}: {exc}",))

    def reset(self) -> None:
        self.inner.reset()


class MonitorSuite:
    """The runtime monitor m_f (composite of contrast + plausibility) and the stop-region rule, fail-safe.

    The members are the objects `perception_safety.monitors` builds for the offline evaluator too. The stop rule
    runs only with ``stop_region.enabled`` (issue 25 item 5: the flag was accepted and never read); its source must
    be the detections (a live node has no ground truth: refused, never a rule that silently watches nothing).
    """

    def __init__(self, config: MonitorsConfig) -> None:
        if config.stop_region.enabled and config.stop_region.source != "detections":
            raise ConfigError(f"monitors.stop_region.source: {config.stop_region.source!r} cannot be judged online "
                              "(the node receives no ground truth); use 'detections'")
        base = build_runtime_monitor(config)
        self.members = [Guarded(m) for m in base.monitors]
        self.runtime = CompositeMonitor(self.members, base.name)
        self.stop_rule = Guarded(build_stop_rule(config)) if config.stop_region.enabled else None
        #: the plausibility monitor (tracks, ghosts) for the overlay, if configured
        self.plausibility = next((g.inner for g in self.members if hasattr(g.inner, "track_view")), None)

    def evaluate(self, frame: Frame) -> tuple[list[MonitorResult], set[str]]:
        """Member results, the combined verdict, then the stop rule's; and the names of members that raised."""
        comp = self.runtime.evaluate(frame)
        rules = [self.stop_rule] if self.stop_rule is not None else []
        results = [*comp.parts, comp.combined, *(r.update(frame) for r in rules)]
        failed = {g.name for g in [*self.members, *rules] if g.failed}
        return results, failed

    def mark_unjudged(self, results: list[MonitorResult], problems: tuple[str, ...]) -> list[MonitorResult]:
        """The stop rule's result says when boxes were left out (WARN, a reason): never an OK about boxes unread."""
        if not problems:
            return results
        note = f"{len(problems)} unreadable box(es) not judged"
        return [replace(r, level=max(r.level, Level.WARN), reasons=(*r.reasons, note)) if r.name == self.stop_name
                else r for r in results]

    @property
    def stop_name(self) -> str:
        """The stop rule's result name ('' when the rule is disabled)."""
        return self.stop_rule.name if self.stop_rule is not None else ""

    @property
    def names(self) -> list[str]:
        return [*(m.name for m in self.members), self.runtime.name, *([self.stop_name] if self.stop_name else [])]


def stop_requested(results: list[MonitorResult], params: SafetyMonitorParams, failed: set[str],
                   runtime_name: str, stop_name: str) -> bool:
    """Stop when the stop-region rule fires, when m_f alarms (if configured), or fail-safe when a monitor raised."""
    if failed and params.fail_safe_stop:
        return True
    for r in results:
        if r.name in failed or r.name == runtime_name or not r.alarm:
            continue
        if r.name == stop_name or params.stop_on_monitor_alarm:
            return True
    return False
