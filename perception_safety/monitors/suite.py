"""The monitors of the `safety_monitor` node as one object, used unchanged by the node and offline
(`perception-safety monitor`): the runtime monitor m_f (contrast + plausibility), the stop rule, fail-safe
wrapping, the stop decision and the validation of camera-relative regions against the camera in use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perception_safety.core.types import Frame
from perception_safety.errors import PerceptionSafetyError
from perception_safety.monitors.base import Level, Monitor, MonitorResult
from perception_safety.monitors.composite import CompositeMonitor, build_runtime_monitor, build_stop_rule
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.regions.forms import Region
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError, rect_pixels
from perception_safety.monitors.stop_region import stop_geometry


class Guarded:
    """Fail-safe wrapper: a member monitor that raises yields an ERROR result (alarm) instead of propagating; a
    region that cannot be used with the camera (`RegionError`) is named as a configuration error."""

    def __init__(self, monitor: Monitor) -> None:
        self.inner = monitor
        self.name = monitor.name
        self.failed = False

    def update(self, frame: Frame) -> MonitorResult:
        try:
            self.failed = False
            return self.inner.update(frame)
        except RegionError as exc:
            self.failed = True
            return MonitorResult(self.name, alarm=True, level=Level.ERROR, reasons=(f"configuration error: {exc}",))
        except Exception as exc:
            self.failed = True
            return MonitorResult(self.name, alarm=True, level=Level.ERROR,
                                 reasons=(f"monitor raised {type(exc).__name__}: {exc}",))

    def reset(self) -> None:
        self.inner.reset()


def region_problems(config: MonitorsConfig, camera: CameraInUse) -> list[str]:
    """Every enabled region that cannot be used with ``camera``: one message each naming the region and the image
    size (empty when all fit). The same checks the monitors make per frame, all at once: rectangles that miss the
    image, the stop rule's corridor and the ground a stop rectangle must cover (`stop_geometry`)."""
    checks: list[tuple[bool, str, Region | None]] = [
        (config.contrast.enabled and config.contrast.roi is not None, "contrast.roi", config.contrast.roi),
        (config.plausibility.enabled, "plausibility.danger_region", config.plausibility.danger_region),
        (config.plausibility.enabled, "plausibility.warning_region", config.plausibility.warning_region),
    ]
    problems = []
    for enabled, name, region in checks:
        try:
            if enabled and region is not None:
                rect_pixels(name, region, camera)
        except RegionError as exc:
            problems.append(str(exc))
    if config.stop_region.enabled:
        try:
            stop_geometry(config.stop_region, config.camera, camera)
        except RegionError as exc:
            problems.append(str(exc))
    return problems


def region_warnings(config: MonitorsConfig) -> list[str]:
    """What the region checks cannot say (never a silent OK): a stop rectangle without the ground it must cover."""
    stop = config.stop_region
    if stop.enabled and stop.rule == "region" and stop.corridor is None:
        return ["stop_region.region: no stop_region.corridor states the ground it must cover, so whether it reaches "
                "a pedestrian in the ego's path on this camera is not checked (docs/monitors.md, Coverage)"]
    return []


class MonitorSuiteError(PerceptionSafetyError):
    """A monitors configuration the suite cannot run (names the key)."""


class MonitorSuite:
    """The runtime monitor m_f (composite of contrast + plausibility) and the stop-region rule, fail-safe.

    The members are the objects `perception_safety.monitors` builds for the offline evaluator too. The stop rule
    runs only with ``stop_region.enabled``; its source must be the detections (the node has no ground truth:
    refused, never a rule that silently watches nothing).
    """

    def __init__(self, config: MonitorsConfig) -> None:
        if config.stop_region.enabled and config.stop_region.source != "detections":
            raise MonitorSuiteError(f"monitors.stop_region.source: {config.stop_region.source!r} cannot be judged "
                                    "online (the node receives no ground truth); use 'detections'")
        self.config = config
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

    def region_problems(self, camera: CameraInUse) -> list[str]:
        """The configured regions that cannot be used with ``camera`` (`region_problems`)."""
        return region_problems(self.config, camera)

    def reset(self) -> None:
        """Forget all state (a new episode or bag)."""
        self.runtime.reset()
        if self.stop_rule is not None:
            self.stop_rule.reset()

    @property
    def stop_name(self) -> str:
        """The stop rule's result name ('' when the rule is disabled)."""
        return self.stop_rule.name if self.stop_rule is not None else ""

    @property
    def names(self) -> list[str]:
        return [*(m.name for m in self.members), self.runtime.name, *([self.stop_name] if self.stop_name else [])]


def stop_requested(results: Sequence[MonitorResult], failed: set[str], runtime_name: str, stop_name: str,
                   fail_safe_stop: bool = True, stop_on_monitor_alarm: bool = True) -> bool:
    """Stop when the stop-region rule fires, when m_f alarms (if ``stop_on_monitor_alarm``), or fail-safe when a
    monitor raised (if ``fail_safe_stop``)."""
    if failed and fail_safe_stop:
        return True
    for r in results:
        if r.name in failed or r.name == runtime_name or not r.alarm:
            continue
        if r.name == stop_name or stop_on_monitor_alarm:
            return True
    return False


class RegionCheck:
    """The suite's regions validated against the camera in use; validated again only when the camera changes.

    ``status()`` is never OK before a camera was seen (STALE) and ERROR, naming each region and the image size,
    while a region does not fit."""

    def __init__(self, suite: MonitorSuite) -> None:
        self.suite = suite
        self.camera: CameraInUse | None = None
        self.problems: list[str] = []
        self._key: object = None
        self._checked = False

    def update(self, camera: CameraInUse | None, unknown: str = "") -> bool:
        """Validate for ``camera`` (``None``: the camera is unknown, ``unknown`` says why); True when it changed."""
        key = camera if camera is not None else unknown
        if self._checked and key == self._key:
            return False
        self._key, self._checked, self.camera = key, True, camera
        self.problems = self.suite.region_problems(camera) if camera is not None else [unknown]
        return True

    def status(self) -> tuple[Level, str, dict[str, object]]:
        """(level, message, values) of a diagnostic status."""
        if not self._checked:
            return Level.STALE, "no camera seen yet: regions not validated", {}
        values: dict[str, object] = {}
        if self.camera is not None:
            values = {"image": f"{self.camera.size[0]}x{self.camera.size[1]}",
                      "camera_model": self.camera.intrinsics is not None}
        if self.problems:
            return Level.ERROR, "configuration error: " + "; ".join(self.problems), values
        assert self.camera is not None
        warnings = region_warnings(self.suite.config)
        if warnings:
            return Level.WARN, f"regions fit the {self.camera.describe()}; " + "; ".join(warnings), values
        return Level.OK, f"regions fit the {self.camera.describe()}", values
