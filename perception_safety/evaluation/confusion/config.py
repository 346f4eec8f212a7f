"""Configuration of the confusion-matrix evaluation (YAML section ``confusion``)."""

from __future__ import annotations

import math
from fnmatch import fnmatchcase
from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from perception_safety.core.labels import expand
from perception_safety.evaluation.confusion.ground_distance import GroundCamera
from perception_safety.evaluation.confusion.types import EmptyColumn

MAX_CLASSES = 8  # the proposition matrix has 2^n rows and columns


def _default_classes() -> dict[str, list[str]]:
    # nuScenes categories and COCO detector labels, grouped as in the seed paper (Section IV); KITTI's names too
    # (a cyclist is a vehicle.bicycle in nuScenes, so KITTI's Cyclist is an obstacle here as well)
    return {
        "ped": ["ped", "human.*", "pedestrian", "person", "Pedestrian", "Person_sitting"],
        "obs": [
            "obs",
            "vehicle.*",
            "movable_object.*",
            "static_object.*",
            "car",
            "truck",
            "bus",
            "train",
            "bicycle",
            "motorcycle",
            "trailer",
            "barrier",
            "traffic_cone",
            "Car",
            "Van",
            "Truck",
            "Tram",
            "Cyclist",
            "Misc",
        ],
    }


class ConfusionConfig(BaseModel):
    """How frames become confusion matrices: class map, matching rule, distance bins, normalisation."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    classes: dict[str, list[str]] = Field(default_factory=_default_classes)
    """Evaluation class -> label patterns (``fnmatch``, case-sensitive; ``@preset`` entries of
    `perception_safety.core.labels.PRESETS` expand); order = matrix order."""
    empty_label: str = "empty"
    iou_threshold: float = Field(0.5, ge=0.0, le=1.0)
    matching: Literal["iou", "centre_distance"] = "iou"
    """``iou``: 2D boxes, IoU >= iou_threshold; ``centre_distance``: 3D object lists, bird's-eye-view centre distance
    <= centre_distance_m (nuScenes-style; docs/objects3d.md)."""
    centre_distance_m: float = Field(2.0, gt=0.0, le=100.0)
    class_aware: bool = False
    """Match only detections and ground truth of the same evaluation class."""
    bin_edges: list[float] = Field(default_factory=lambda: [10.0 * i for i in range(11)])
    """Increasing edges e_0 < ... < e_K in metres; bin k is the half-open [e_k, e_{k+1})."""
    empty_column: EmptyColumn = "zeros"
    """How P(pred | true) is defined for a true label with no samples (never NaN)."""
    chunk_frames: int = Field(4096, ge=1, le=1_000_000)
    """Frames processed per vectorised batch."""
    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    """Two-sided Clopper-Pearson intervals on every proportion are at level 1 - alpha."""
    sample_unit: Literal["frame", "track_window"] = "frame"
    """What one count is: every object in every frame (``frame``), or one majority vote per track per
    ``track_window_s`` window (``track_window``; consecutive frames of a track are not independent)."""
    track_window_s: float = Field(1.0, gt=0.0, le=86400.0)
    """Window length in seconds for ``sample_unit: track_window`` (windows of the frame stamps)."""
    min_samples: int = Field(10, ge=1)
    """A column (true label in a bin) or a rate with fewer samples is flagged as thin (warning)."""
    min_clusters: int = Field(10, ge=2)
    """A requirement whose number rests on fewer independent clusters (episodes) is INCONCLUSIVE."""
    ground_camera: GroundCamera | None = None
    """Camera intrinsics and mounting for the ground-plane distance of unmatched detections (precision per
    bin); None = unmatched detections have no distance and count in pooled precision only."""

    @field_validator("classes")
    @classmethod
    def _check_classes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        if not 1 <= len(value) <= MAX_CLASSES:
            raise ValueError(f"expected 1 to {MAX_CLASSES} evaluation classes, got {len(value)}")
        for name, patterns in value.items():
            if not name or "," in name or name != name.strip():
                raise ValueError(f"class name {name!r} must be non-empty, without commas or surrounding spaces")
            if not patterns:
                raise ValueError(f"class {name!r} needs at least one label pattern")
        return {name: list(expand(patterns)) for name, patterns in value.items()}

    @field_validator("bin_edges")
    @classmethod
    def _check_edges(cls, value: list[float]) -> list[float]:
        if len(value) < 2:
            raise ValueError("need at least two edges (one bin)")
        if any(not math.isfinite(v) for v in value):
            raise ValueError("edges must be finite")
        if any(b <= a for a, b in pairwise(value)):
            raise ValueError(f"edges must be strictly increasing, got {value}")
        if value[0] < 0:
            raise ValueError("edges are distances and must be >= 0")
        return value

    @model_validator(mode="after")
    def _check_empty(self) -> ConfusionConfig:
        if self.empty_label in self.classes or not self.empty_label or "," in self.empty_label:
            raise ValueError(f"empty_label {self.empty_label!r} must be non-empty, comma-free and not a class name")
        return self

    @property
    def class_names(self) -> tuple[str, ...]:
        return tuple(self.classes)

    @property
    def bins(self) -> tuple[tuple[float, float], ...]:
        e = self.bin_edges
        return tuple((e[i], e[i + 1]) for i in range(len(e) - 1))


class ClassMapper:
    """Maps dataset/detector labels to evaluation-class indices (first matching class wins; -1 = unmapped)."""

    def __init__(self, config: ConfusionConfig) -> None:
        self._classes = list(config.classes.items())
        self._cache: dict[str, int] = {}

    def __call__(self, label: str) -> int:
        code = self._cache.get(label)
        if code is None:
            code = -1
            for i, (name, patterns) in enumerate(self._classes):
                if label == name or any(fnmatchcase(label, p) for p in patterns):
                    code = i
                    break
            self._cache[label] = code
        return code
