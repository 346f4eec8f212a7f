"""Pinhole intrinsics of the camera in use (what a sensor_msgs/CameraInfo's K and size say)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics (pixels): focal lengths and principal point, plus the image size they belong to."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    def __post_init__(self) -> None:
        values = (self.fx, self.fy, self.cx, self.cy)
        if not all(math.isfinite(v) for v in values) or self.fx <= 0 or self.fy <= 0:
            raise ValueError(f"intrinsics: focal lengths must be finite and positive, got {values}")
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"intrinsics: image size {self.width}x{self.height} is not positive")

    @classmethod
    def from_fov(cls, width: int, height: int, fov_deg: float) -> Intrinsics:
        """Square pixels, principal point at the image centre, ``f = W / (2 tan(fov/2))``."""
        f = width / (2.0 * math.tan(math.radians(fov_deg) / 2.0))
        return cls(f, f, width / 2.0, height / 2.0, int(width), int(height))

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return (self.width, self.height)

    def matrix(self) -> np.ndarray:
        """The 3x3 K matrix (for the optical frame x right, y down, z forward)."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])
