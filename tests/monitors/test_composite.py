"""Composite monitor and the shipped monitors config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame
from perception_safety.io.config import ConfigError, load_model
from perception_safety.monitors.base import Level, Monitor, MonitorResult
from perception_safety.monitors.composite import CompositeMonitor, build_runtime_monitor, build_stop_rule
from perception_safety.monitors.config import DANGER_REGION, WARNING_REGION, MonitorsConfig
from perception_safety.monitors.regions.resolve import CameraInUse, rect_pixels

REPO = Path(__file__).resolve().parents[2]


class _Fixed:
    """A fixed-verdict member (counts resets)."""

    def __init__(self, name: str, alarm: bool, level: Level) -> None:
        self.name, self.alarm, self.level, self.resets = name, alarm, level, 0

    def update(self, frame: Frame) -> MonitorResult:
        return MonitorResult(self.name, self.alarm, self.level, (f"{self.name} says so",), {"x": 1.5})

    def reset(self) -> None:
        self.resets += 1


def test_composite_is_or_of_members_with_prefixed_reasons() -> None:
    a, b = _Fixed("a", False, Level.OK), _Fixed("b", True, Level.ERROR)
    comp = CompositeMonitor([a, b])
    assert isinstance(comp, Monitor)
    res = comp.evaluate(Frame(0))
    assert res.combined.alarm and res.combined.level == Level.ERROR
    assert res.combined.reasons == ("a: a says so", "b: b says so")
    assert res.combined.values["b.x"] == 1.5 and res.combined.values["b.alarm"] == 1.0
    assert res.part("a").alarm is False
    comp.reset()
    assert a.resets == b.resets == 1
    quiet = CompositeMonitor([_Fixed("a", False, Level.STALE), _Fixed("c", False, Level.OK)]).update(Frame(0))
    assert not quiet.alarm and quiet.level == Level.OK
    with pytest.raises(ValueError, match="duplicate"):
        CompositeMonitor([a, _Fixed("a", True, Level.OK)])


def test_shipped_config_is_the_paper_defaults() -> None:
    cfg = load_model(REPO / "config" / "monitors.yaml", MonitorsConfig, "monitors")
    default = MonitorsConfig()
    assert cfg.plausibility == default.plausibility
    # the paper's rectangle, plus the ground corridor it stops for too (rule: either) on the demo camera's mounting
    assert cfg.stop_region.model_copy(update={"rule": "region", "corridor": None}) == default.stop_region
    assert cfg.stop_region.rule == "either" and cfg.camera.height_m == 1.6 and cfg.camera.pitch_deg == 0.0
    c = cfg.stop_region.corridor
    assert c is not None and (c.half_width_m, c.near_m, c.far_m, c.braking) == (1.5, 0.0, 25.0, None)
    assert cfg.contrast.model_copy(update={"threshold": None}) == default.contrast
    assert cfg.contrast.effective_threshold == 1580.0
    # the paper's pixel rectangles (DESIGN.md), shipped as fractions: exactly its pixels on its 1280x720 camera
    paper = CameraInUse((1280, 720))
    assert rect_pixels("d", cfg.plausibility.danger_region, paper) == (385, 470, 895, 720)
    assert rect_pixels("w", WARNING_REGION, paper) == (274, 468, 1007, 720)
    assert rect_pixels("d", DANGER_REGION, paper) == (385, 470, 895, 720)
    assert cfg.stop_region.region == WARNING_REGION and cfg.stop_region.region.units == "fraction"


def test_bad_config_names_file_and_key(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text("monitors:\n  contrast:\n    statistic: entropy\n")
    with pytest.raises(ConfigError, match=r"m\.yaml: monitors\.contrast\.statistic"):
        load_model(p, MonitorsConfig, "monitors")
    p.write_text("monitors:\n  plausibility:\n    danger_region: {units: px, left: 0, top: 0, width: -5, height: 3}\n")
    with pytest.raises(ConfigError, match=r"monitors\.plausibility\.danger_region\.width"):
        load_model(p, MonitorsConfig, "monitors")


def test_runtime_monitor_combines_contrast_and_plausibility() -> None:
    mon = build_runtime_monitor()
    assert [m.name for m in mon.monitors] == ["contrast", "plausibility"]
    flat = np.full((720, 1280, 3), 100, dtype=np.uint8)
    res = mon.evaluate(Frame(0, image=flat))
    assert res.combined.alarm and res.part("contrast").alarm and not res.part("plausibility").alarm
    off = build_runtime_monitor(MonitorsConfig.model_validate({"contrast": {"enabled": False}}))
    assert [m.name for m in off.monitors] == ["plausibility"]
    stop = build_stop_rule()
    camera = Intrinsics.from_fov(1280, 720, 90.0)
    assert stop.update(Frame(0, detections=(Detection(Box(600, 500, 650, 600), "person"),), camera=camera)).alarm
