"""The coverage check of a stop rectangle (issue 23): a rectangle that does not cover the ground corridor it must
protect on the camera in use is a configuration error naming the region, the image size and how far it reaches.

Expected distances come from the pinhole model written here: a level camera h metres above flat ground sees the
ground line at forward distance x on row ``v = cy + fy h / x``, and a column u at that distance at lateral
``y = (cx - u) x / fx``.
"""

from __future__ import annotations

import re

import pytest

from perception_safety.core.camera import Intrinsics
from perception_safety.monitors.config import CameraMount, Region, StopRegionConfig
from perception_safety.monitors.regions.forms import GroundCorridor
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError
from perception_safety.monitors.stop_region import stop_geometry

PAPER = Region.of_pixels(274, 468, 733, 252, (1280, 720))


def _rule(far: float, half_width: float = 1.5, near: float = 0.0) -> StopRegionConfig:
    return StopRegionConfig(region=PAPER, corridor=GroundCorridor(half_width_m=half_width, near_m=near, far_m=far))


def _reach(k: Intrinsics, h: float, top_fraction: float) -> float:
    """Forward distance whose ground line is on the rectangle's top row."""
    return k.fy * h / (top_fraction * k.height - k.cy)


def test_paper_rectangle_on_a_4_3_camera_reaches_7_1_m_and_is_refused_by_name():
    k = Intrinsics.from_fov(640, 480, 90.0)
    reach = _reach(k, 1.6, 0.65)
    assert reach == pytest.approx(7.11, abs=0.01)
    # laterally: the bottom row sees the ground at 320 * 1.6 / 240 = 2.13 m, where the rectangle's columns 137 and
    # 503.8 are 1.22 m left and right of the camera
    bottom = k.fy * 1.6 / (480 - k.cy)
    side = min(k.cx - 0.2140625 * 640, (0.2140625 + 0.57265625) * 640 - k.cx) * bottom / k.fx
    mount = CameraMount(height_m=1.6)
    stop_geometry(_rule(far=0.99 * reach, half_width=0.99 * side), mount, CameraInUse(k.size, k))  # covered
    with pytest.raises(RegionError) as err:
        stop_geometry(_rule(far=8.0), mount, CameraInUse(k.size, k))
    msg = str(err.value)
    assert msg.startswith("stop_region.region: fraction (0.214062, 0.65, 0.572656, 0.35) does not cover "
                          "stop_region.corridor (ground corridor |y| <= 1.5 m, x from 0 m to 8 m) on the 640x480 image "
                          "(camera 1.6 m high, pitch 0 deg): ")
    assert (f"it reaches only {reach:.1f} m ahead (top row 312), it covers only |y| <= {side:.2f} m at "
            f"{bottom:.1f} m") in msg
    assert "would not stop the car" in msg


def test_demo_camera_reach_and_lateral_cover_from_the_pinhole_model():
    k = Intrinsics.from_fov(1280, 720, 90.0)
    cam, mount = CameraInUse(k.size, k), CameraMount(height_m=1.6)
    reach = _reach(k, 1.6, 0.65)  # 9.48 m
    stop_geometry(_rule(far=9.4), mount, cam)
    with pytest.raises(RegionError, match=re.escape(f"it reaches only {reach:.1f} m ahead (top row 468)")):
        stop_geometry(_rule(far=9.6), mount, cam)
    # laterally: the bottom row (720) sees the ground at 640 * 1.6 / 360 = 2.84 m; the rectangle's columns 274 and 1007
    # there are 1.63 m left and right of the camera: a 1.7 m half-width is not covered, 1.6 m is
    bottom = k.fy * 1.6 / (720 - k.cy)
    side = min(k.cx - 274, 1007 - k.cx) * bottom / k.fx
    assert side == pytest.approx(1.627, abs=1e-3)
    stop_geometry(_rule(far=9.0, half_width=1.6), mount, cam)
    with pytest.raises(RegionError, match=re.escape(f"it covers only |y| <= {side:.2f} m at {bottom:.1f} m")):
        stop_geometry(_rule(far=9.0, half_width=1.7), mount, cam)


def test_a_rectangle_that_does_not_reach_the_image_bottom_misses_near_pedestrians():
    k = Intrinsics.from_fov(1280, 720, 90.0)
    high = Region.fraction(0.2, 0.6, 0.6, 0.3)  # rows 432..648
    start = k.fy * 1.6 / (648 - k.cy)
    cfg = StopRegionConfig(region=high, corridor=GroundCorridor(half_width_m=1.0, near_m=0.0, far_m=8.0))
    with pytest.raises(RegionError, match=re.escape(f"it starts only {start:.1f} m ahead (bottom row 648)")):
        stop_geometry(cfg, CameraMount(height_m=1.6), CameraInUse(k.size, k))
    # a corridor starting beyond that distance is covered
    far_only = cfg.model_copy(update={"corridor": GroundCorridor(half_width_m=1.0, near_m=4.0, far_m=8.0)})
    stop_geometry(far_only, CameraMount(height_m=1.6), CameraInUse(k.size, k))


def test_coverage_cannot_be_checked_without_mounting_or_camera_model():
    k = Intrinsics.from_fov(1280, 720, 90.0)
    with pytest.raises(RegionError, match=r"stop_region\.region: checking that fraction .* covers "
                                          r"stop_region\.corridor .* needs the camera's mounting height "
                                          r"\(monitors\.camera\.height_m\) for the 1280x720 image"):
        stop_geometry(_rule(far=8.0), CameraMount(), CameraInUse(k.size, k))
    with pytest.raises(RegionError, match=r"needs the camera model, but the 1280x720 image has no CameraInfo"):
        stop_geometry(_rule(far=8.0), CameraMount(height_m=1.6), CameraInUse(k.size))
    # the paper's rule without a corridor to cover is placed (its coverage is a warning of the suite, not checked)
    assert stop_geometry(StopRegionConfig(), CameraMount(), CameraInUse(k.size)).rect == (274, 468, 1007, 720)


def test_a_corridor_beyond_what_a_downward_camera_sees_is_refused():
    """Pitched 40 deg down, 1.6 m high, 90 deg HFOV 16:9 (vertical half-FOV 29.4 deg): the top row looks 10.6 deg
    below the horizon, at the ground 1.6 / tan(10.6 deg) = 8.5 m ahead; a corridor to 25 m is out of sight."""
    import math

    k = Intrinsics.from_fov(1280, 720, 90.0)
    top = 1.6 / math.tan(math.radians(40.0) - math.atan(k.cy / k.fy))
    cfg = StopRegionConfig(rule="corridor", corridor=GroundCorridor(half_width_m=1.5, far_m=25.0))
    with pytest.raises(RegionError, match=re.escape(f"does not see the far edge of the ground corridor |y| <= 1.5 m, "
                                                    f"x from 0 m to 25 m at 25 m (its top row sees flat ground up to "
                                                    f"{top:.1f} m ahead)")):
        stop_geometry(cfg, CameraMount(height_m=1.6, pitch_deg=-40.0), CameraInUse(k.size, k))
    short = cfg.model_copy(update={"corridor": GroundCorridor(half_width_m=1.5, far_m=0.95 * top)})
    stop_geometry(short, CameraMount(height_m=1.6, pitch_deg=-40.0), CameraInUse(k.size, k))
