"""Image object detectors behind one interface (`Detector`): ONNX Runtime models described by a YAML file, and
OpenCV's HOG people detector. Used offline by the episode runner and online by the ``detector`` node."""

from perception_safety.detectors.base import Detector, DetectorError
from perception_safety.detectors.build import build_detector
from perception_safety.detectors.config import DetectorConfig, HOGConfig

__all__ = ["Detector", "DetectorConfig", "DetectorError", "HOGConfig", "build_detector"]
