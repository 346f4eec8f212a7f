"""The episode runner's detector: the simulated `DetectorModel`, or a real image `Detector` (HOG, ONNX).

Both are called as ``detect(ground_truth, clean_image, perturbed_image, seed, frame_index)``; a real detector
sees only the perturbed image (what a camera would give it). It is built once per engine (an ONNX session
is costly to create) and reused across episodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perception_safety.core.types import Detection
from perception_safety.detectors import Detector, DetectorConfig, DetectorError, build_detector
from perception_safety.sim.detector_model import DetectorModel


class ImageDetectorAdapter:
    """A `Detector` behind the simulated detector's call signature."""

    def __init__(self, detector: Detector) -> None:
        self.detector = detector

    def detect(self, ground_truth: Any, clean: np.ndarray, image: np.ndarray, seed: int,
               index: int) -> tuple[Detection, ...]:
        return self.detector.detect(image)


def build_image_detector(cfg: Any) -> ImageDetectorAdapter | None:
    """For ``episodes.detector.kind`` hog/onnx the adapter; None for ``simulated``. Errors are `DetectorError`."""
    kind = getattr(cfg, "kind", "simulated")
    if kind == "simulated":
        return None
    dcfg = DetectorConfig(kind=kind, onnx_model=cfg.onnx_model, onnx_threads=cfg.onnx_threads, hog=cfg.hog)
    try:
        return ImageDetectorAdapter(build_detector(dcfg))
    except DetectorError as exc:
        raise DetectorError(f"episodes.detector: {exc}") from exc


def frame_detector(cfg: Any, image_detector: ImageDetectorAdapter | None, focal_px: float,
                   image_size: tuple[int, int]) -> DetectorModel | ImageDetectorAdapter:
    """The detector of one episode: the shared image detector, or a fresh simulated model for the camera."""
    if image_detector is not None:
        return image_detector
    return DetectorModel(cfg, focal_px=focal_px, image_size=image_size)
