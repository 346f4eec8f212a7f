"""Four real camera models and pedestrians at known ground positions, built in code (issue 23: the shipped monitors on
any camera). Boxes are projected here with the pinhole formulas, independently of the monitors' own projection code.

A level camera ``height_m`` above flat ground sees a pedestrian standing at ground position (x forward, y left,
metres from the point below the camera), a 0.6 m wide and 1.7 m tall upright rectangle, as the box
``u = cx - fx (y +- 0.3) / x``, ``v_top = cy + fy (height_m - 1.7) / x``, ``v_foot = cy + fy height_m / x``, cut
to the image. ``lane_decision`` is the corridor rule computed from that geometry alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame

PED_HEIGHT_M, PED_HALF_WIDTH_M = 1.7, 0.3
#: pedestrians in the ego lane (x ahead, y left): at 8 m and at 20 m, on the centreline and 1 m to the right
LANE_PEDESTRIANS = ((8.0, 0.0), (8.0, -1.0), (20.0, 0.0), (20.0, -1.0))


@dataclass(frozen=True)
class Camera:
    name: str
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    height_m: float

    @property
    def size(self) -> str:
        return f"{self.width}x{self.height}"

    def intrinsics(self) -> Intrinsics:
        return Intrinsics(self.fx, self.fy, self.cx, self.cy, self.width, self.height)

    def box(self, x: float, y: float) -> Box:
        """The image box of a pedestrian at ground position ``(x, y)`` (cut to the image)."""
        u0 = self.cx - self.fx * (y + PED_HALF_WIDTH_M) / x
        u1 = self.cx - self.fx * (y - PED_HALF_WIDTH_M) / x
        v0 = self.cy + self.fy * (self.height_m - PED_HEIGHT_M) / x
        v1 = self.cy + self.fy * self.height_m / x
        return Box(max(0.0, u0), max(0.0, v0), min(float(self.width), u1), min(float(self.height), v1))

    def image(self, seed: int) -> np.ndarray:
        """A textured picture (contrast well above the contrast monitor's threshold)."""
        return np.random.default_rng(seed).integers(0, 256, size=(self.height, self.width, 3), dtype=np.uint8)

    def frame(self, stamp_ns: int, x: float, y: float, label: str = "person") -> Frame:
        """One frame with a perfect detector seeing one pedestrian at ``(x, y)``, with the camera's CameraInfo."""
        return Frame(stamp_ns, detections=(Detection(self.box(x, y), label, 0.9),), image=self.image(stamp_ns % 1000),
                     frame_id=self.name, camera=self.intrinsics())

    def foot_on_ground(self, x: float, y: float, assumed_height_m: float) -> tuple[float, float]:
        """Where a monitor that believes the camera is ``assumed_height_m`` high puts the foot of ``(x, y)``: the foot
        pixel back-projected onto flat ground (x and y scale by assumed / true height)."""
        u, v = self.cx - self.fx * y / x, self.cy + self.fy * self.height_m / x
        xg = self.fy * assumed_height_m / (v - self.cy)
        return xg, (self.cx - u) * xg / self.fx


def _fov(width: int, height: int, hfov_deg: float) -> tuple[float, float, float, float]:
    f = width / (2.0 * math.tan(math.radians(hfov_deg) / 2.0))
    return f, f, width / 2.0, height / 2.0


CAMERAS = (
    # KITTI's rectified left colour camera (P2 of the raw-data calibration), 1.65 m above the road
    Camera("kitti_like", 1242, 375, 721.5377, 721.5377, 609.5593, 172.854, 1.65),
    # a 4:3 camera with the demo's 90 deg horizontal FOV: taller vertical FOV, the paper's rectangle reaches 7.1 m
    Camera("vga_4_3", 640, 480, *_fov(640, 480, 90.0), 1.6),
    # a wide full-HD camera, 120 deg horizontal FOV, 1.5 m high
    Camera("wide_1080p", 1920, 1080, *_fov(1920, 1080, 120.0), 1.5),
    # the demo's camera (builtin simulator): 1280x720, 90 deg, 1.6 m, level
    Camera("demo_720p", 1280, 720, *_fov(1280, 720, 90.0), 1.6),
)
