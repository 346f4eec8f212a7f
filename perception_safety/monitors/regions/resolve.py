"""Regions resolved against the camera in use: pixel rectangles, the projected ground corridor, validation.

The camera in use for a frame is its image size (from the image, else its CameraInfo, else
``monitors.camera.image_size``) and its intrinsics (the frame's CameraInfo, else ``monitors.camera.intrinsics``
for that size). A region that misses the image, a pixel region drawn for another image size, and a metric region
without a camera model are configuration errors (`RegionError`, naming the region and the image size), never an
empty region.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Frame
from perception_safety.errors import PerceptionSafetyError
from perception_safety.monitors.regions.forms import PIXEL_DECIMALS, CameraMount, GroundCorridor, Region
from perception_safety.monitors.regions.ground import GroundCamera, clip_polygon, polygon_area

T = TypeVar("T")
Rect = tuple[float, float, float, float]


class RegionError(PerceptionSafetyError):
    """A monitor region cannot be used with the camera in use (names the region and the image size)."""


@dataclass(frozen=True)
class CameraInUse:
    """What is known about the camera of a frame: its image size and, when calibrated, its intrinsics."""

    size: tuple[int, int]
    intrinsics: Intrinsics | None = None

    def describe(self) -> str:
        w, h = self.size
        return f"{w}x{h} image" + ("" if self.intrinsics is not None else " (no camera model)")


def camera_in_use(frame: Frame, mount: CameraMount) -> CameraInUse:
    """The camera of ``frame`` (see the module docstring); `RegionError` when not even its image size is known."""
    intr = frame.camera
    if frame.image is not None:
        size = (int(frame.image.shape[1]), int(frame.image.shape[0]))
        if intr is not None and intr.size != size:
            raise RegionError(f"image {size[0]}x{size[1]} disagrees with its CameraInfo "
                              f"{intr.width}x{intr.height}: regions cannot be placed")
    elif intr is not None:
        size = intr.size
    elif mount.image_size is not None:
        size = (int(mount.image_size[0]), int(mount.image_size[1]))
    else:
        raise RegionError("image size unknown (the frame has no image and no CameraInfo): regions cannot be placed; "
                          "set monitors.camera.image_size")
    k = mount.intrinsics
    if intr is None and k is not None and mount.image_size is not None and tuple(mount.image_size) == size:
        intr = Intrinsics(k.fx, k.fy, k.cx, k.cy, size[0], size[1])
    return CameraInUse(size, intr)


def rect_pixels(name: str, region: Region, camera: CameraInUse) -> Rect:
    """``(x0, y0, x1, y1)`` of ``region`` on the camera's image, clipped; `RegionError` when it cannot be used."""
    w, h = camera.size
    if region.units == "px":
        assert region.image_size is not None
        if tuple(region.image_size) != (w, h):
            raise RegionError(f"{name}: {region.describe()}, but the camera in use gives a {w}x{h} image "
                              "(redraw it for this camera or give it as fractions)")
        x0, y0 = region.left, region.top
        x1, y1 = region.left + region.width, region.top + region.height
    else:
        x0, y0 = round(region.left * w, PIXEL_DECIMALS), round(region.top * h, PIXEL_DECIMALS)
        x1 = round((region.left + region.width) * w, PIXEL_DECIMALS)
        y1 = round((region.top + region.height) * h, PIXEL_DECIMALS)
    if min(x1, w) <= max(x0, 0.0) or min(y1, h) <= max(y0, 0.0):
        raise RegionError(f"{name}: {region.describe()} does not intersect the {w}x{h} image")
    return (x0, y0, x1, y1)


@dataclass(frozen=True)
class Corridor:
    """A `GroundCorridor` projected through a calibrated camera: which boxes stand in it, and its outline."""

    spec: GroundCorridor
    camera: GroundCamera
    lateral_offset_m: float

    def inside(self, boxes: np.ndarray, speed_mps: float | None) -> np.ndarray:
        """Per box ``(n, 4)``: its bottom-centre, back-projected onto flat ground, lies in the corridor (a box cut
        off by the image's bottom edge counts as inside; a foot at or above the horizon does not)."""
        return self.inside_to(boxes, self.spec.far_at(speed_mps))

    def inside_to(self, boxes: np.ndarray, far: float | np.ndarray) -> np.ndarray:
        """`inside` with the far edge given: one value, or one per box (boxes of frames at different ego speeds)."""
        if boxes.shape[0] == 0:
            return np.zeros(0, dtype=bool)
        height = self.camera.intrinsics.height
        cut = boxes[:, 3] >= height - self.spec.bottom_edge_px
        x, y, on_ground = self.camera.to_ground((boxes[:, 0] + boxes[:, 2]) / 2.0, boxes[:, 3])
        with np.errstate(invalid="ignore"):
            within = on_ground & (x >= self.spec.near_m) & (x <= far)
            within &= np.abs(y + self.lateral_offset_m) <= self.spec.half_width_m
        return cut | within

    def outline(self, speed_mps: float | None = None) -> np.ndarray:
        """The corridor's image polygon ``(n, 2)`` clipped to the image (empty when it is not visible)."""
        s = self.spec
        c, sn = math.cos(self.camera.pitch_rad), math.sin(self.camera.pitch_rad)
        # the nearest forward distance still in front of the camera (a camera pitched up sees no ground close by)
        x_front = (0.06 + self.camera.height_m * sn) / c
        near, far = max(s.near_m, x_front), s.far_at(speed_mps)
        if far <= near:
            return np.zeros((0, 2))
        y0 = -self.lateral_offset_m
        xs = np.array([near, far, far, near])
        ys = np.array([y0 + s.half_width_m, y0 + s.half_width_m, y0 - s.half_width_m, y0 - s.half_width_m])
        u, v, _ = self.camera.to_pixels(xs, ys)
        k = self.camera.intrinsics
        return clip_polygon(np.stack([u, v], axis=1), float(k.width), float(k.height))


def ground_camera(name: str, subject: str, camera: CameraInUse, mount: CameraMount) -> GroundCamera:
    """The camera in use on flat ground; `RegionError` (``name: subject needs ...``) without intrinsics or height."""
    w, h = camera.size
    if camera.intrinsics is None:
        raise RegionError(f"{name}: {subject} needs the camera model, but the {w}x{h} image has no CameraInfo (and "
                          "monitors.camera.intrinsics is not set for this size)")
    if mount.height_m is None:
        raise RegionError(f"{name}: {subject} needs the camera's mounting height (monitors.camera.height_m) for the "
                          f"{w}x{h} image")
    return GroundCamera(camera.intrinsics, mount.height_m, math.radians(mount.pitch_deg))


def corridor_for(name: str, spec: GroundCorridor, camera: CameraInUse, mount: CameraMount,
                 subject: str = "") -> Corridor:
    """The corridor projected with the camera in use; `RegionError` without a camera model, when it misses the image
    or when the camera does not see its far edge (at its configured ``far_m``)."""
    w, h = camera.size
    geo = Corridor(spec, ground_camera(name, subject or f"a metric {spec.describe()}", camera, mount),
                   mount.lateral_offset_m)
    where = f"the {w}x{h} image (camera {mount.height_m:g} m high, pitch {mount.pitch_deg:g} deg)"
    if polygon_area(geo.outline(None)) <= 0.0:
        raise RegionError(f"{name}: {spec.describe()} does not intersect {where}")
    y0 = -mount.lateral_offset_m
    u, v, front = geo.camera.to_pixels(np.full(2, spec.far_m), np.array([y0 + spec.half_width_m,
                                                                         y0 - spec.half_width_m]))
    if not (front.all() and (u >= 0).all() and (u <= w).all() and (v >= 0).all() and (v <= h).all()):
        top = geo.camera.to_ground(np.array([geo.camera.intrinsics.cx]), np.array([0.0]))[0][0]
        sees = f"flat ground up to {top:.1f} m ahead" if math.isfinite(top) else "the horizon"
        raise RegionError(f"{name}: {where} does not see the far edge of the {spec.describe()} at {spec.far_m:g} m "
                          f"(its top row sees {sees}): a pedestrian there would not be judged")
    return geo


class PerCamera(Generic[T]):
    """A value built from the camera in use, rebuilt only when the camera changes (errors are not cached)."""

    def __init__(self, build: Callable[[CameraInUse], T]) -> None:
        self._build = build
        self._camera: CameraInUse | None = None
        self._value: T | None = None

    def get(self, camera: CameraInUse) -> T:
        if camera != self._camera or self._value is None:
            self._value = self._build(camera)
            self._camera = camera
        return self._value
