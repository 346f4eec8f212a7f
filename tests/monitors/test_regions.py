"""Camera-relative regions: config forms, flat-ground projection, resolution and validation against the camera."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Frame
from perception_safety.monitors.config import MonitorsConfig, Region
from perception_safety.monitors.regions.forms import CameraMount, GroundCorridor
from perception_safety.monitors.regions.ground import GroundCamera, clip_polygon, polygon_area
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError, camera_in_use, rect_pixels
from perception_safety.monitors.suite import region_problems


def test_forms_refuse_ambiguous_or_impossible_regions():
    with pytest.raises(ValidationError, match="a region needs units"):
        Region.model_validate({"left": 274, "top": 468, "width": 733, "height": 252})
    with pytest.raises(ValidationError, match="a pixel region needs image_size"):
        Region.model_validate({"units": "px", "left": 274, "top": 468, "width": 733, "height": 252})
    with pytest.raises(ValidationError, match="leave the image: fractions lie in"):
        Region.fraction(0.5, 0.6, 0.6, 0.2)
    with pytest.raises(ValidationError, match="image_size belongs to pixel regions"):
        Region.model_validate({"units": "fraction", "left": 0, "top": 0, "width": 1, "height": 1,
                               "image_size": [10, 10]})
    with pytest.raises(ValidationError, match=r"far_m \(2\) must exceed near_m \(5\)"):
        GroundCorridor(half_width_m=1.0, near_m=5.0, far_m=2.0)
    with pytest.raises(ValidationError, match="intrinsics need the image_size"):
        CameraMount.model_validate({"intrinsics": {"fx": 1, "fy": 1, "cx": 0, "cy": 0}})
    with pytest.raises(ValidationError, match="rule: corridor needs a corridor"):
        MonitorsConfig.model_validate({"stop_region": {"rule": "corridor"}})
    with pytest.raises(ValidationError, match="rule: either needs a corridor"):
        MonitorsConfig.model_validate({"stop_region": {"rule": "either"}})
    # with rule: region a corridor is the ground the rectangle must cover (checked against the camera)
    cfg = MonitorsConfig.model_validate({"stop_region": {"corridor": {"half_width_m": 1, "far_m": 9}}})
    assert cfg.stop_region.uses_region and not cfg.stop_region.uses_corridor


def test_fractions_scale_with_the_image_and_pixels_need_their_size():
    r = Region.of_pixels(274, 468, 733, 252, (1280, 720))
    assert rect_pixels("r", r, CameraInUse((1280, 720))) == (274.0, 468.0, 1007.0, 720.0)  # exact, not 273.999..
    assert rect_pixels("r", r, CameraInUse((640, 360))) == (137.0, 234.0, 503.5, 360.0)
    px = Region.px(10, 10, 20, 20, (100, 50))
    assert rect_pixels("r", px, CameraInUse((100, 50))) == (10, 10, 30, 30)
    with pytest.raises(RegionError, match=r"^r: px \(10, 10, 20, 20\) drawn for 100x50, but .* 200x100 image"):
        rect_pixels("r", px, CameraInUse((200, 100)))
    with pytest.raises(RegionError, match=r"^r: px \(120, 0, 20, 20\) drawn for 100x50 does not intersect the 100x50"):
        rect_pixels("r", Region.px(120, 0, 20, 20, (100, 50)), CameraInUse((100, 50)))


def test_back_projection_inverts_the_simulators_projection():
    """GroundCamera vs the builtin simulator's independent camera model (sim.camera), pitched down 7 deg."""
    from perception_safety.sim.camera import CameraPose, project_points

    k = Intrinsics.from_fov(1280, 720, 90.0)
    pitch = math.radians(-7.0)
    cam = GroundCamera(k, 1.6, pitch)
    rng = np.random.default_rng(3)
    x, y = rng.uniform(3, 60, 200), rng.uniform(-8, 8, 200)
    uv_sim = project_points(k, CameraPose(0.0, 0.0, 1.6, pitch).ego_to_camera(np.stack([x, y, 0 * x], axis=1)))
    u, v, front = cam.to_pixels(x, y)
    assert front.all()
    np.testing.assert_allclose(np.stack([u, v], axis=1), uv_sim, rtol=0, atol=1e-9)
    gx, gy, hit = cam.to_ground(u, v)
    assert hit.all()
    np.testing.assert_allclose(gx, x, rtol=1e-9)
    np.testing.assert_allclose(gy, y, rtol=0, atol=1e-9)
    # the horizon and above are not ground
    assert cam.horizon_row() == pytest.approx(360.0 + k.fy * math.tan(pitch))
    assert not cam.to_ground(np.array([640.0]), np.array([cam.horizon_row() - 1.0]))[2][0]


def test_polygon_clip_and_area():
    square = np.array([[-10.0, -10.0], [10.0, -10.0], [10.0, 10.0], [-10.0, 10.0]])
    clipped = clip_polygon(square, 5.0, 4.0)
    assert polygon_area(clipped) == pytest.approx(20.0)
    assert polygon_area(clip_polygon(square + 100.0, 5.0, 4.0)) == 0.0


def test_camera_in_use_comes_from_image_camera_info_or_config():
    k = Intrinsics.from_fov(64, 48, 90.0)
    img = np.zeros((48, 64, 3), np.uint8)
    assert camera_in_use(Frame(0, image=img), CameraMount()) == CameraInUse((64, 48))
    assert camera_in_use(Frame(0, camera=k), CameraMount()) == CameraInUse((64, 48), k)
    with pytest.raises(RegionError, match="image 32x48 disagrees with its CameraInfo 64x48"):
        camera_in_use(Frame(0, image=img[:, :32], camera=k), CameraMount())
    with pytest.raises(RegionError, match="image size unknown"):
        camera_in_use(Frame(0), CameraMount())
    mount = CameraMount.model_validate({"image_size": [64, 48], "intrinsics": {"fx": 32, "fy": 32, "cx": 32,
                                                                                "cy": 24}})
    assert camera_in_use(Frame(0), mount) == CameraInUse((64, 48), Intrinsics(32, 32, 32, 24, 64, 48))
    # configured intrinsics are for their own image size only
    assert camera_in_use(Frame(0, image=np.zeros((96, 128, 3), np.uint8)), mount).intrinsics is None


def test_region_problems_name_every_region_that_does_not_fit():
    cfg = MonitorsConfig.model_validate({
        "plausibility": {"danger_region": {"units": "px", "left": 385, "top": 470, "width": 510, "height": 250,
                                           "image_size": [1280, 720]}},
        "stop_region": {"rule": "corridor", "corridor": {"half_width_m": 1.5, "far_m": 30}},
    })
    problems = region_problems(cfg, CameraInUse((1242, 375)))
    assert len(problems) == 2
    assert problems[0].startswith("plausibility.danger_region: px (385, 470, 510, 250) drawn for 1280x720, but the "
                                  "camera in use gives a 1242x375 image")
    assert problems[1].startswith("stop_region.corridor: a metric ground corridor") and "1242x375" in problems[1]
    assert region_problems(MonitorsConfig(), CameraInUse((1242, 375))) == []
