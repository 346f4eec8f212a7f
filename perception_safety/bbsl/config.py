"""The ``bbsl`` config section (config/bbsl.yaml): exfunction bindings, image size, test-oracle settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, field_validator

from perception_safety.bbsl.bindings import Binding, parse_binding_value

# The paper's set-up (Section 5.1, Table 2): KITTI images, vehicle under test, ID1/ID5 constants.
DEFAULT_BINDINGS: dict[str, Any] = {
    "vehicleExists": "subject_exists",
    "vehicle": "subject",
    "VehicleExists": "subject_exists",
    "Vehicle": "subject",
    "stoppingDistance": [275, 375],
    "directionAreaDistance": [420, 821],
}


class BBSLConfig(BaseModel):
    """Settings of BBSL evaluation and specification-based testing (Definitions 11-13)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    image_size: tuple[PositiveFloat, PositiveFloat] = (1242.0, 375.0)
    bindings: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_BINDINGS))
    target_classes: list[str] = Field(default_factory=lambda: ["car"], min_length=1)
    detection_classes: list[str] | None = None
    assignment: Literal["max_iou", "one_to_one"] = "max_iou"
    iou_thresholds: list[float] = Field(default_factory=lambda: [0.6, 0.8], min_length=1)
    breakdown_iou: float = Field(0.6, ge=0.0, le=1.0)
    examples_per_cell: PositiveInt = 5

    @field_validator("bindings")
    @classmethod
    def _check_bindings(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, raw in value.items():
            parse_binding_value(raw, str(name))  # raises ValueError with what was expected
        return value

    @field_validator("iou_thresholds")
    @classmethod
    def _check_thresholds(cls, value: list[float]) -> list[float]:
        for t in value:
            if not 0.0 <= t <= 1.0:
                raise ValueError(f"IoU threshold {t} is outside [0, 1]")
        return value

    def parsed_bindings(self) -> dict[str, Binding]:
        return {
            str(k).removesuffix("()"): parse_binding_value(v, f"bbsl.bindings.{k}") for k, v in self.bindings.items()
        }

    def detection_class_set(self) -> set[str]:
        return set(self.detection_classes if self.detection_classes is not None else self.target_classes)
