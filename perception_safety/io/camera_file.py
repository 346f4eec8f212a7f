"""The camera given on the command line: ``WIDTHxHEIGHT``, or a ROS camera calibration YAML
(camera_calibration_parsers' layout: ``image_width``, ``image_height``, ``camera_matrix: {rows: 3, cols: 3,
data: [fx, 0, cx, 0, fy, cy, 0, 0, 1]}``)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from perception_safety.io.config import ConfigError, load_yaml
from perception_safety.monitors.regions.forms import CameraMount, Pinhole

_SIZE = re.compile(r"^\s*(\d{1,5})\s*[xX]\s*(\d{1,5})\s*$")


def read_camera(text: str) -> tuple[tuple[int, int], Pinhole | None]:
    """``(image size, intrinsics or None)`` from ``WxH`` or a calibration YAML file; `ConfigError` naming it."""
    m = _SIZE.match(text)
    if m:
        w, h = int(m.group(1)), int(m.group(2))
        if w <= 0 or h <= 0:
            raise ConfigError(f"--camera {text}: image size must be positive")
        return (w, h), None
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"--camera {text}: neither WIDTHxHEIGHT nor a camera calibration YAML file")
    data = load_yaml(path)
    try:
        w, h = int(data["image_width"]), int(data["image_height"])
        k = [float(v) for v in data["camera_matrix"]["data"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: a camera calibration YAML needs image_width, image_height and "
                          f"camera_matrix.data (9 numbers): {type(exc).__name__}: {exc}") from exc
    if len(k) != 9 or not all(math.isfinite(v) for v in k) or k[0] <= 0 or k[4] <= 0 or w <= 0 or h <= 0:
        raise ConfigError(f"{path}: camera_matrix.data must be 9 finite numbers with fx, fy > 0 and the image size "
                          f"positive (got {w}x{h}, {k})")
    return (w, h), Pinhole(fx=k[0], fy=k[4], cx=k[2], cy=k[5])


def camera_mount_with(mount: CameraMount, text: str) -> CameraMount:
    """``mount`` with the image size (and intrinsics) of ``--camera`` as the fall-back for frames without
    a CameraInfo."""
    size, k = read_camera(text)
    return mount.model_copy(update={"image_size": size, "intrinsics": k if k is not None else mount.intrinsics
                                    if mount.image_size == size else None})
