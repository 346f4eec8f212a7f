"""Flat-ground projection of a pinhole camera: ground point <-> pixel, for metric monitor regions.

Ground frame: origin on the ground below the optical centre, x forward, y left, z up; the camera is at height h,
pitched by theta (positive looks up), no roll. A ground point (x, y, 0) has camera coordinates
``F = x cos(theta) - h sin(theta)`` (forward), ``L = y`` (left), ``U = -x sin(theta) - h cos(theta)`` (up) and pixel
``u = cx - fx L / F``, ``v = cy - fy U / F`` (K of the optical frame: x right = -L, y down = -U, z = F).
Back-projection intersects the pixel's ray ``(cos + b sin, -a, sin - b cos)``, ``a = (u - cx)/fx``,
``b = (v - cy)/fy``, with the ground: ``t = h / (b cos - sin)`` when the ray points down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perception_safety.core.camera import Intrinsics

#: closest forward distance (m, camera axis) at which a corridor corner is projected (clips points behind)
NEAR_PLANE_M = 0.05


@dataclass(frozen=True)
class GroundCamera:
    """A calibrated camera at ``height_m`` above flat ground, pitched by ``pitch_rad`` (positive up)."""

    intrinsics: Intrinsics
    height_m: float
    pitch_rad: float = 0.0

    def to_pixels(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Ground points -> ``(u, v, in_front)``; points not in front of the camera get NaN."""
        k, h = self.intrinsics, self.height_m
        c, s = math.cos(self.pitch_rad), math.sin(self.pitch_rad)
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        fwd = x * c - h * s
        up = -x * s - h * c
        front = fwd > NEAR_PLANE_M
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(front, k.cx - k.fx * y / fwd, np.nan)
            v = np.where(front, k.cy - k.fy * up / fwd, np.nan)
        return u, v, front

    def to_ground(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pixels -> ground points ``(x, y, on_ground)``; pixels at or above the horizon are not on the ground."""
        k, h = self.intrinsics, self.height_m
        c, s = math.cos(self.pitch_rad), math.sin(self.pitch_rad)
        a = (np.asarray(u, dtype=np.float64) - k.cx) / k.fx
        b = (np.asarray(v, dtype=np.float64) - k.cy) / k.fy
        down = b * c - s
        hit = down > 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(hit, h / down, np.nan)
        return t * (c + b * s), -t * a, hit

    def horizon_row(self) -> float:
        """Image row of the horizon (rows below it see the ground)."""
        return self.intrinsics.cy + self.intrinsics.fy * math.tan(self.pitch_rad)

    def row_of_distance(self, x: float) -> float:
        """Image row of the ground line at forward distance ``x`` (rows are lines of constant x: no roll)."""
        return float(self.to_pixels(np.array([x]), np.array([0.0]))[1][0])


def clip_polygon(points: np.ndarray, width: float, height: float) -> np.ndarray:
    """Convex polygon ``(n, 2)`` clipped to the image rectangle ``[0, width] x [0, height]`` (Sutherland-Hodgman)."""
    poly = [tuple(p) for p in np.asarray(points, dtype=np.float64)]
    for axis, bound, keep_below in ((0, 0.0, False), (0, width, True), (1, 0.0, False), (1, height, True)):
        if not poly:
            break
        out: list[tuple[float, float]] = []
        for i, cur in enumerate(poly):
            prev = poly[i - 1]
            cur_in = cur[axis] <= bound if keep_below else cur[axis] >= bound
            prev_in = prev[axis] <= bound if keep_below else prev[axis] >= bound
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                out.append((prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1])))
            if cur_in:
                out.append(cur)
        poly = out
    return np.array(poly, dtype=np.float64).reshape(-1, 2)


def polygon_area(points: np.ndarray) -> float:
    """Area of a simple polygon ``(n, 2)`` (shoelace)."""
    if len(points) < 3:
        return 0.0
    x, y = points[:, 0], points[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
