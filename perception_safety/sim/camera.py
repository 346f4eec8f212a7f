"""Pinhole camera: intrinsics from image size and horizontal FOV, projection of points and 3D boxes.

Axes are ROS REP-103 (x forward, y left, z up). A point ``(x, y, z)`` in the camera frame maps to
``u = c_x - f y / x``, ``v = c_y - f z / x`` with ``f = W / (2 tan(fov/2))``, ``c = (W/2, H/2)`` —
the intrinsics CARLA's RGB camera uses, so both backends share this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box

__all__ = ["CameraPose", "Intrinsics", "cuboid_corners", "project_cuboid", "project_points", "world_to_ego"]

# The 12 edges of a cuboid whose 8 corners are ordered by the sign bits (x, y, z) of the offsets.
_CORNER_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
_EDGES = np.array(
    [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1],
    dtype=np.int64,
)


@dataclass(frozen=True)
class CameraPose:
    """Camera mounting in the ego frame: position (m) and pitch (rad, positive looks up)."""

    x: float
    y: float
    z: float
    pitch: float = 0.0

    def ego_to_camera(self, points: np.ndarray) -> np.ndarray:
        """Ego-frame points ``(n, 3)`` to the camera's forward/left/up frame."""
        p = np.asarray(points, dtype=np.float64) - np.array([self.x, self.y, self.z])
        c, s = math.cos(self.pitch), math.sin(self.pitch)
        out = np.empty_like(p)
        out[:, 0] = c * p[:, 0] + s * p[:, 2]
        out[:, 1] = p[:, 1]
        out[:, 2] = -s * p[:, 0] + c * p[:, 2]
        return out


def project_points(k: Intrinsics, points_cam: np.ndarray) -> np.ndarray:
    """Camera-frame points ``(n, 3)`` (x > 0) to pixel coordinates ``(n, 2)``."""
    p = np.asarray(points_cam, dtype=np.float64)
    u = k.cx - k.fx * p[:, 1] / p[:, 0]
    v = k.cy - k.fy * p[:, 2] / p[:, 0]
    return np.stack([u, v], axis=1)


def world_to_ego(points: np.ndarray, ego_x: float, ego_y: float, ego_yaw: float) -> np.ndarray:
    """Scenario-frame points ``(n, 3)`` into the ego frame of a vehicle at (x, y, yaw)."""
    p = np.asarray(points, dtype=np.float64).copy()
    p[:, 0] -= ego_x
    p[:, 1] -= ego_y
    c, s = math.cos(ego_yaw), math.sin(ego_yaw)
    x = c * p[:, 0] + s * p[:, 1]
    y = -s * p[:, 0] + c * p[:, 1]
    p[:, 0], p[:, 1] = x, y
    return p


def cuboid_corners(center: np.ndarray, extent: np.ndarray, yaw: float = 0.0) -> np.ndarray:
    """The 8 corners ``(8, 3)`` of a box with half-sizes ``extent`` rotated by ``yaw`` about z."""
    local = _CORNER_SIGNS * np.asarray(extent, dtype=np.float64)
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return local @ rot.T + np.asarray(center, dtype=np.float64)


def project_cuboid(k: Intrinsics, corners_cam: np.ndarray, near: float = 0.1, clip: bool = True) -> Box | None:
    """2D box enclosing a cuboid's projection, edges clipped at the ``near`` plane.

    Returns None when the cuboid is entirely behind the camera or (with ``clip``) entirely
    outside the image; with ``clip`` the box is cut to the image rectangle.
    """
    c = np.asarray(corners_cam, dtype=np.float64)
    front = c[:, 0] >= near
    if not front.any():
        return None
    pts = [c[front]]
    a, b = c[_EDGES[:, 0]], c[_EDGES[:, 1]]
    crossing = (a[:, 0] >= near) != (b[:, 0] >= near)
    if crossing.any():
        a, b = a[crossing], b[crossing]
        t = (near - a[:, 0]) / (b[:, 0] - a[:, 0])
        pts.append(a + t[:, None] * (b - a))
    uv = project_points(k, np.concatenate(pts))
    x0, y0 = uv.min(axis=0)
    x1, y1 = uv.max(axis=0)
    if clip:
        x0, x1 = max(x0, 0.0), min(x1, float(k.width))
        y0, y1 = max(y0, 0.0), min(y1, float(k.height))
        if x0 >= x1 or y0 >= y1:
            return None
    return Box(float(x0), float(y0), float(x1), float(y1))
