"""The shipped monitors on any camera (issue 23, "Done when"): through the `MonitorSuite` the safety_monitor node runs,
a pedestrian in the ego lane at 8 m and at 20 m is a stop or the configuration is refused by name, never OK.

Cameras and boxes: tests/camera_scenes.py (pinhole projection written there). The expected decision is computed here
from that geometry alone: the shipped rule stops when the box overlaps the paper's rectangle (fractions of the image)
or when its foot pixel, back-projected with the configured mounting height, lies in the configured corridor.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from perception_safety.io.config import load_model
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.regions.resolve import camera_in_use
from perception_safety.monitors.suite import MonitorSuite, RegionCheck, stop_requested

REPO = Path(__file__).resolve().parents[2]
CAMERA_NAMES = ("kitti_like", "vga_4_3", "wide_1080p", "demo_720p")
#: the paper's warning rectangle as fractions of the image (left, top, right, bottom)
PAPER = (274 / 1280, 468 / 720, 1007 / 1280, 1.0)


def shipped_configs() -> dict[str, MonitorsConfig]:
    """The monitors of every shipped config: config/monitors.yaml, and the safety_monitor node's params files."""
    out = {"monitors.yaml": load_model(REPO / "config" / "monitors.yaml", MonitorsConfig, "monitors")}
    for file in ("safety_monitor.yaml", "online.yaml"):
        doc = yaml.safe_load((REPO / "config" / file).read_text())
        out[file] = MonitorsConfig.model_validate(doc["safety_monitor"]["ros__parameters"]["monitors"])
    return out


SHIPPED = shipped_configs()


def expected(cam, cfg: MonitorsConfig, x: float, y: float) -> str:
    """'stop', or 'refused' when the configuration cannot place its rule on this camera, from the geometry alone."""
    stop = cfg.stop_region
    if stop.rule != "region" and cfg.camera.height_m is None:
        return "refused"  # the corridor cannot be placed without the mounting height
    box = cam.box(x, y)
    x0, y0, x1, y1 = (PAPER[0] * cam.width, PAPER[1] * cam.height, PAPER[2] * cam.width, PAPER[3] * cam.height)
    overlaps = min(box.x_max, x1) > max(box.x_min, x0) and min(box.y_max, y1) > max(box.y_min, y0)
    xg, yg = cam.foot_on_ground(x, y, cfg.camera.height_m)
    c = stop.corridor
    in_corridor = c is not None and (box.y_max >= cam.height - 1 or (c.near_m <= xg <= c.far_m
                                                                      and abs(yg) <= c.half_width_m))
    return "stop" if overlaps or in_corridor else "OK"


def judge(cfg: MonitorsConfig, frame) -> tuple[str, str]:
    """('stop' | 'refused' | 'OK', detail) of the node's suite on one frame: regions validated for the frame's
    camera first (as the node does on CameraInfo), then the frame judged with the node's stop decision."""
    suite = MonitorSuite(cfg)
    check = RegionCheck(suite)
    check.update(camera_in_use(frame, cfg.camera))
    if check.problems:
        return "refused", "; ".join(check.problems)
    results, failed = suite.evaluate(frame)
    rule = next(r for r in results if r.name == suite.stop_name)
    stop = stop_requested(results, failed, suite.runtime.name, suite.stop_name)
    # the stop must come from the stop rule itself, not only from the plausibility monitor's ghost alarm
    return ("stop" if stop and rule.alarm else "OK"), "; ".join(rule.reasons)


@pytest.mark.parametrize("config", sorted(SHIPPED))
@pytest.mark.parametrize("camera", CAMERA_NAMES)
def test_shipped_monitors_stop_for_a_pedestrian_in_the_lane_or_refuse_by_name(camera_scenes, config, camera):
    cam = next(c for c in camera_scenes.CAMERAS if c.name == camera)
    cfg = SHIPPED[config]
    for i, (x, y) in enumerate(camera_scenes.LANE_PEDESTRIANS):
        outcome, detail = judge(cfg, cam.frame(1_000 + i, x, y))
        assert outcome != "OK", (config, camera, x, y, detail)
        assert outcome == expected(cam, cfg, x, y), (config, camera, x, y, detail)
        if outcome == "refused":
            # by name: the key, the image size and what is missing
            assert detail.startswith("stop_region.corridor: ") and f"the {cam.size} image" in detail, detail
            assert "monitors.camera.height_m" in detail, detail


def test_the_live_camera_config_refuses_until_its_mounting_is_set_then_stops(camera_scenes):
    cam = next(c for c in camera_scenes.CAMERAS if c.name == "vga_4_3")
    live = SHIPPED["safety_monitor.yaml"]
    assert judge(live, cam.frame(1, 20.0, 0.0))[0] == "refused"
    mounted = live.model_copy(update={"camera": live.camera.model_copy(update={"height_m": cam.height_m})})
    outcome, detail = judge(mounted, cam.frame(1, 20.0, 0.0))
    assert outcome == "stop" and detail == "person box stands in the ground corridor"


@pytest.mark.parametrize("camera", CAMERA_NAMES)
def test_the_paper_rectangle_alone_is_refused_where_it_does_not_reach_the_corridor(camera_scenes, camera):
    """rule: region (the paper's rectangle alone) keeps the shipped corridor as the ground it must cover: on every one
    of these cameras its top row sees the ground nearer than 25 m, d = fy h / (0.65 H - cy), so it is refused, naming
    the region, the image size and that distance."""
    cam = next(c for c in camera_scenes.CAMERAS if c.name == camera)
    cfg = SHIPPED["monitors.yaml"]
    rect_only = cfg.model_copy(update={"stop_region": cfg.stop_region.model_copy(update={"rule": "region"})})
    reach = cam.fy * cfg.camera.height_m / (PAPER[1] * cam.height - cam.cy)
    assert reach < 25.0
    outcome, detail = judge(rect_only, cam.frame(1, 8.0, 0.0))
    assert outcome == "refused"
    assert detail.startswith("stop_region.region: fraction (0.214062, 0.65, 0.572656, 0.35) does not cover "
                             "stop_region.corridor (ground corridor |y| <= 1.5 m, x from 0 m to 25 m) on the "
                             f"{cam.size} image (camera 1.6 m high, pitch 0 deg): "
                             f"it reaches only {reach:.1f} m ahead"), detail
