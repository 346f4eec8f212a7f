"""Pydantic config models of the monitors (YAML section ``monitors`` of ``config/monitors.yaml``).

Defaults are the constants of the SG/RH/AC paper's public CARLA code (DESIGN.md): contrast
threshold 1580 at 1280x720, warning region (274, 468, 733, 252), danger region (385, 470, 510, 250), the
regions as fractions of the image (the same pixels at 1280x720, scaled on other cameras).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from perception_safety.core.labels import expand
from perception_safety.monitors.regions.forms import CameraMount, GroundCorridor, Region

__all__ = [
    "DANGER_REGION", "WARNING_REGION", "CameraMount", "ContrastConfig", "GroundCorridor", "MonitorsConfig",
    "PerturbationConfig", "PlausibilityConfig", "Region", "StopRegionConfig",
]


class _Strict(BaseModel):
    # NaN/inf are refused: a NaN threshold or region edge makes every comparison false, silently disabling an alarm
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


#: labels or fnmatch patterns; ``@preset`` entries of `perception_safety.core.labels.PRESETS` are expanded
DEFAULT_WATCHED = ("@pedestrians",)


def _expand_watched(value: tuple[str, ...]) -> tuple[str, ...]:
    out = expand(value)
    if not out:
        raise ValueError("watched_classes is empty: the monitor would watch nothing")
    return out


#: the paper's rectangles (DESIGN.md, drawn for 1280x720) as fractions of the image: the same pixels at 1280x720
PAPER_IMAGE_SIZE = (1280, 720)
WARNING_REGION = Region.of_pixels(274, 468, 733, 252, PAPER_IMAGE_SIZE)
DANGER_REGION = Region.of_pixels(385, 470, 510, 250, PAPER_IMAGE_SIZE)

ContrastStatistic = Literal["row_variance", "rms", "michelson"]
DEFAULT_CONTRAST_THRESHOLDS: dict[str, float] = {
    # paper's CARLA code, 8-bit luma, 1280x720
    "row_variance": 1580.0,
    # sqrt(1580) / 255: the same level expressed as an RMS contrast of luma in [0, 1] (our choice)
    "rms": 0.156,
    # our choice, not from the paper: percentile Michelson contrast below 0.5 is a washed-out image
    "michelson": 0.5,
}


class ContrastConfig(_Strict):
    """Contrast monitor: alarm when the statistic of the 8-bit luma falls below ``threshold``."""

    enabled: bool = True
    statistic: ContrastStatistic = "row_variance"
    threshold: float | None = Field(default=None, ge=0.0, description="None: the statistic's default threshold")
    roi: Region | None = None
    michelson_percentiles: tuple[float, float] = (1.0, 99.0)
    alarm_on_missing_image: bool = False

    @model_validator(mode="after")
    def _check(self) -> ContrastConfig:
        lo, hi = self.michelson_percentiles
        if not 0.0 <= lo < hi <= 100.0:
            raise ValueError(
                f"michelson_percentiles must satisfy 0 <= lo < hi <= 100, got {self.michelson_percentiles}"
            )
        return self

    @property
    def effective_threshold(self) -> float:
        return DEFAULT_CONTRAST_THRESHOLDS[self.statistic] if self.threshold is None else self.threshold


class PlausibilityConfig(_Strict):
    """Ghost-detection monitor: watched classes, regions, association and physical bounds."""

    enabled: bool = True
    watched_classes: tuple[str, ...] = expand(DEFAULT_WATCHED)
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    danger_region: Region = DANGER_REGION
    warning_region: Region = WARNING_REGION
    nearby_margin_px: float = Field(default=40.0, ge=0.0, description="warning region grown by this margin")
    history_frames: int = Field(default=5, ge=1, description="how many past frames a track stays alive unseen")
    association_iou: float = Field(default=0.3, gt=0.0, le=1.0)
    association_distance_px: float = Field(default=80.0, ge=0.0, description="centre-distance fallback")
    warmup_frames: int = Field(default=1, ge=0, description="no ghost alarms in the first frames of an episode")
    max_jump_px_per_frame: float | None = Field(default=50.0, gt=0.0)
    image_size: tuple[int, int] | None = Field(default=None, description="(width, height) when frames carry no image")
    outside_tolerance_px: float = Field(default=2.0, ge=0.0)
    alarm_on_jump: bool = True
    alarm_on_outside: bool = True
    # bounds on the work per frame (issue 19 item 2: 8k detections took 3.1 s and 2.6 GB in detections x tracks
    # matrices); a real detector gives far fewer watched-class boxes per frame
    max_detections: int = Field(default=256, ge=1, le=10_000,
                                description="watched detections judged per frame (highest scores first)")
    max_tracks: int = Field(default=256, ge=1, le=10_000, description="live tracks kept (most recently seen first)")

    @field_validator("watched_classes")
    @classmethod
    def _expand(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _expand_watched(value)


class StopRegionConfig(_Strict):
    """Emergency-braking rule: stop when a watched box overlaps ``region`` (``rule: region``), or when its
    bottom-centre on flat ground lies in the metric ``corridor`` (``rule: corridor``)."""

    enabled: bool = True
    watched_classes: tuple[str, ...] = expand(DEFAULT_WATCHED)
    rule: Literal["region", "corridor"] = "region"
    region: Region = WARNING_REGION
    corridor: GroundCorridor | None = Field(default=None, description="the ego's path on the ground (rule: corridor)")
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    min_overlap_px: float = Field(default=0.0, ge=0.0, description="intersection area must exceed this (rule: region)")
    source: Literal["detections", "ground_truth"] = "detections"

    @field_validator("watched_classes")
    @classmethod
    def _expand(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _expand_watched(value)

    @model_validator(mode="after")
    def _rule_has_its_region(self) -> StopRegionConfig:
        if self.rule == "corridor" and self.corridor is None:
            raise ValueError("rule: corridor needs a corridor: {half_width_m, near_m, far_m[, braking]}")
        if self.rule == "region" and self.corridor is not None:
            raise ValueError("a corridor is given but rule is 'region': set rule: corridor to use it")
        return self


class MonitorsConfig(_Strict):
    """The ``monitors`` section: the runtime monitor m_f (contrast + plausibility), the stop rule and the camera
    they watch (mounting and fall-backs for camera-relative regions)."""

    camera: CameraMount = CameraMount()
    contrast: ContrastConfig = ContrastConfig()
    plausibility: PlausibilityConfig = PlausibilityConfig()
    stop_region: StopRegionConfig = StopRegionConfig()


PerturbationName = Literal[
    "smoke",
    "fog",
    "sun_flare",
    "rain",
    "row_add_logic",
    "shifted_pixels",
    "coarse_dropout",
    "grid_dropout",
    "channel_shuffle",
    "channel_dropout",
    "contrast",
    "brightness",
    "gaussian_noise",
]


class PerturbationConfig(_Strict):
    """One image perturbation of an evaluation run (`perception_safety.monitors.perturbations.perturb`)."""

    name: PerturbationName
    level: int = Field(default=1, ge=0, description="0 = none; the maximum depends on the perturbation")
    seed: int = 0
