"""Which detector to build (``kind``) and its settings (`build.build_detector` makes the `Detector`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class HOGConfig(_Strict):
    """OpenCV HOG people detector: window stride, pyramid scale, SVM margin threshold, NMS."""

    class_name: str = "person"
    stride: int = Field(default=8, ge=1, le=64)
    scale: float = Field(default=1.05, gt=1.0, le=2.0)
    hit_threshold: float = 0.0
    score_threshold: float = Field(default=0.5, ge=0.0, le=1.0, description="on the logistic of the SVM margin")
    iou_threshold: float = Field(default=0.45, gt=0.0, le=1.0)
    max_detections: int = Field(default=100, ge=1, le=10_000)


class DetectorConfig(_Strict):
    """``kind: hog`` or ``onnx`` (with ``onnx_model``: the YAML describing the model)."""

    kind: Literal["hog", "onnx"] = "hog"
    onnx_model: Path | None = Field(default=None, description="YAML file describing the ONNX model (kind onnx)")
    onnx_threads: int = Field(default=1, ge=1, le=64)
    hog: HOGConfig = HOGConfig()

    @model_validator(mode="after")
    def _check(self) -> DetectorConfig:
        if self.kind == "onnx" and self.onnx_model is None:
            raise ValueError("kind onnx needs onnx_model (the model's YAML file)")
        return self
