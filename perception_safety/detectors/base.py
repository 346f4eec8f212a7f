"""The `Detector` interface: one RGB image in, detections (pixel boxes of that image, class, score) out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from perception_safety.core.types import Detection
from perception_safety.errors import PerceptionSafetyError


class DetectorError(PerceptionSafetyError):
    """A detector cannot be built (model file, YAML description) or its output does not match the description."""


class NonFiniteOutputError(DetectorError):
    """The model gave NaN/inf outputs: the frame was not seen, so it must never become "no detections"."""

    def __init__(self, message: str, values: int) -> None:
        super().__init__(message)
        self.values = values


@runtime_checkable
class Detector(Protocol):
    """``detect(image)``: ``image`` is HxWx3 RGB (or HxW mono) uint8; boxes are in that image's pixels."""

    name: str

    def detect(self, image: np.ndarray) -> tuple[Detection, ...]: ...


def as_rgb(image: np.ndarray) -> np.ndarray:
    """HxWx3 uint8 RGB view/copy of an RGB or mono image; anything else is a `DetectorError`."""
    if image.dtype != np.uint8:
        raise DetectorError(f"image: expected uint8, got {image.dtype}")
    if image.ndim == 2:
        return np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim == 3 and image.shape[2] == 3:
        return image
    raise DetectorError(f"image: expected HxW or HxWx3, got shape {image.shape}")
