"""A KITTI-like camera and pedestrians at known ground positions, built in code (the real-camera test fixture).

Intrinsics of KITTI's rectified left colour camera (P2 of the raw-data calibration: fx = fy = 721.5377,
cx = 609.5593, cy = 172.854) on a 1242x375 image, mounted 1.65 m above a flat road, level. A pedestrian standing
at ground position (x forward, y left, metres from the point below the camera) is a 0.6 m wide, 1.7 m tall
upright rectangle; its box is projected here by hand with the pinhole formulas ``u = cx - fx y / x``,
``v = cy + fy (h - z) / x``, independently of the monitors' own projection code, then cut to the image.
"""

from __future__ import annotations

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, EgoState, Frame

FX = FY = 721.5377
CX, CY = 609.5593, 172.854
WIDTH, HEIGHT = 1242, 375
CAMERA_HEIGHT_M = 1.65
PED_HEIGHT_M, PED_HALF_WIDTH_M = 1.7, 0.3


def intrinsics() -> Intrinsics:
    return Intrinsics(FX, FY, CX, CY, WIDTH, HEIGHT)


def pedestrian_box(x: float, y: float) -> Box:
    """The image box of a pedestrian standing at ground position ``(x, y)`` (cut to the image)."""
    u_left = CX - FX * (y + PED_HALF_WIDTH_M) / x
    u_right = CX - FX * (y - PED_HALF_WIDTH_M) / x
    v_top = CY + FY * (CAMERA_HEIGHT_M - PED_HEIGHT_M) / x
    v_foot = CY + FY * CAMERA_HEIGHT_M / x
    return Box(max(0.0, u_left), max(0.0, v_top), min(float(WIDTH), u_right), min(float(HEIGHT), v_foot))


def image(seed: int = 0) -> np.ndarray:
    """A textured 1242x375 RGB picture (contrast well above the monitor's threshold)."""
    return np.random.default_rng(seed).integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)


def frame(stamp_ns: int, pedestrians: list[tuple[float, float]], speed: float | None = None,
          label: str = "person", with_camera: bool = True, with_image: bool = True) -> Frame:
    """One frame with a perfect detector: a detection and a ground-truth box per pedestrian."""
    from perception_safety.core.types import GroundTruthObject

    boxes = [pedestrian_box(x, y) for x, y in pedestrians]
    return Frame(
        stamp_ns=stamp_ns,
        detections=tuple(Detection(b, label, 0.9) for b in boxes),
        ground_truth=tuple(GroundTruthObject.at_position(b, label, (x, y, 0.0))
                           for b, (x, y) in zip(boxes, pedestrians, strict=True)),
        ego=None if speed is None else EgoState(speed=speed),
        image=image(stamp_ns % 1000) if with_image else None,
        frame_id="kitti_like",
        camera=intrinsics() if with_camera else None,
    )
