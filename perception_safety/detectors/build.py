"""Building the configured detector: HOG or an ONNX model described by its YAML."""

from __future__ import annotations

from perception_safety.detectors.base import Detector, DetectorError
from perception_safety.detectors.config import DetectorConfig
from perception_safety.detectors.hog import HOGPeopleDetector
from perception_safety.detectors.onnx_model import OnnxDetector, load_spec


def build_detector(cfg: DetectorConfig) -> Detector:
    """The configured detector; a missing/unloadable model or a YAML that does not match it is a `DetectorError`."""
    if cfg.kind == "hog":
        return HOGPeopleDetector(cfg.hog)
    if cfg.onnx_model is None:  # DetectorConfig refuses this; a model_construct()ed config may not
        raise DetectorError("detector kind onnx needs onnx_model (the model's YAML file)")
    try:
        spec = load_spec(cfg.onnx_model)
    except DetectorError:
        raise
    except Exception as exc:  # ConfigError from the YAML loader: keep its message (file and key)
        raise DetectorError(str(exc)) from exc
    return OnnxDetector(spec, str(cfg.onnx_model), cfg.onnx_threads)
