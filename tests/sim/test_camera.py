"""Pinhole projection: known 3D points against hand computations, cuboid boxes, near-plane clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.sim.camera import (
    CameraPose,
    Intrinsics,
    cuboid_corners,
    project_cuboid,
    project_points,
    world_to_ego,
)


def test_intrinsics_from_fov_is_carla_formula() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    # f = W / (2 tan(45 deg)) = 640
    assert k.fx == pytest.approx(640.0)
    assert (k.cx, k.cy) == (640.0, 360.0)
    k60 = Intrinsics.from_fov(800, 600, 60.0)
    assert k60.fx == pytest.approx(400.0 / math.tan(math.radians(30.0)))


def test_known_point_projects_to_hand_computed_pixel() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    pose = CameraPose(x=1.5, y=0.0, z=1.6)
    # a point 20 m ahead of the ego centre, 2 m to the right, on the ground:
    # camera-relative (18.5, -2.0, -1.6) -> u = 640 + 640 * 2 / 18.5, v = 360 + 640 * 1.6 / 18.5
    p_cam = pose.ego_to_camera(np.array([[20.0, -2.0, 0.0]]))
    uv = project_points(k, p_cam)[0]
    assert uv[0] == pytest.approx(640 + 640 * 2.0 / 18.5)
    assert uv[1] == pytest.approx(360 + 640 * 1.6 / 18.5)


def test_pitch_up_moves_points_down_in_the_image() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    level = project_points(k, CameraPose(0, 0, 1.0).ego_to_camera(np.array([[10.0, 0.0, 1.0]])))[0]
    tilted = project_points(k, CameraPose(0, 0, 1.0, math.radians(10)).ego_to_camera(np.array([[10.0, 0.0, 1.0]])))[0]
    assert level[1] == pytest.approx(360.0)
    # looking 10 degrees up, a point at the horizon appears 640 * tan(10 deg) px lower
    assert tilted[1] == pytest.approx(360.0 + 640.0 * math.tan(math.radians(10)))


def test_world_to_ego_rotates_by_heading() -> None:
    p = world_to_ego(np.array([[10.0, 5.0, 1.0]]), 10.0, 0.0, math.pi / 2)
    # ego at (10, 0) heading +y: the point 5 m along +y is straight ahead
    np.testing.assert_allclose(p[0], [5.0, 0.0, 1.0], atol=1e-12)


def test_cuboid_box_encloses_hand_projected_corners() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    # 1 m cube centred 10 m ahead, camera frame: corners x in {9.5, 10.5}, y, z in {-0.5, 0.5}
    corners = cuboid_corners(np.array([10.0, 0.0, 0.0]), np.array([0.5, 0.5, 0.5]))
    box = project_cuboid(k, corners)
    assert box is not None
    # the widest extent comes from the near face (x = 9.5)
    assert box.x_min == pytest.approx(640 - 640 * 0.5 / 9.5)
    assert box.x_max == pytest.approx(640 + 640 * 0.5 / 9.5)
    assert box.y_min == pytest.approx(360 - 640 * 0.5 / 9.5)


def test_cuboid_behind_camera_is_none_and_straddling_is_clipped() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    assert project_cuboid(k, cuboid_corners(np.array([-5.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0]))) is None
    # x in [-1.5, 2.5] (straddles the camera plane), y in [0.5, 1.5] (left), z in [-0.5, 0.5]
    straddling = cuboid_corners(np.array([0.5, 1.0, 0.0]), np.array([2.0, 0.5, 0.5]))
    box = project_cuboid(k, straddling, near=0.1)
    assert box is not None
    assert box.x_min == 0.0  # the clipped near part runs off the left image edge
    # the rightmost point is the far corner (2.5, 0.5): u = 640 - 640 * 0.5 / 2.5
    assert box.x_max == pytest.approx(640 - 640 * 0.5 / 2.5)
    assert (box.y_min, box.y_max) == (0.0, 720.0)
