"""Pydantic config models of the monitors (YAML section ``monitors`` of ``config/monitors.yaml``).

Defaults are the constants of the SG/RH/AC paper's public CARLA code (DESIGN.md): contrast
threshold 1580 at 1280x720, warning region (274, 468, 733, 252), danger region (385, 470, 510, 250), the
regions as fractions of the image (the same pixels at 1280x720, scaled on other cameras).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

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


#: the pixel distances of the plausibility monitor, chosen for the paper's 1280x720 camera (`px_image_size`)
PIXEL_DISTANCES = ("nearby_margin_px", "association_distance_px", "max_jump_px_per_frame", "outside_tolerance_px")


class PlausibilityConfig(_Strict):
    """Ghost-detection monitor: watched classes, regions, association and physical bounds.

    The ``*_px`` distances are pixels of an image ``px_image_size`` wide (default: the paper's 1280x720 camera, where
    they are the paper's values); on a camera of another width they scale with it (`pixel_scale`). Given in a config,
    they need the ``px_image_size`` they were chosen for, as a pixel region needs its ``image_size``."""

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
    px_image_size: tuple[PositiveInt, PositiveInt] = Field(
        default=PAPER_IMAGE_SIZE, description="(width, height) of the image the *_px distances were chosen for")
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

    @model_validator(mode="before")
    @classmethod
    def _pixels_need_their_image(cls, data: Any) -> Any:
        if isinstance(data, dict) and "px_image_size" not in data:
            given = [k for k in PIXEL_DISTANCES if data.get(k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} need px_image_size: [width, height], the image they were chosen "
                                 "for (on a camera of another width they scale with it)")
        return data

    def pixel_scale(self, width: int) -> float:
        """Factor from the ``*_px`` distances to pixels of an image ``width`` wide (exactly 1 on their own width)."""
        return 1.0 if width == self.px_image_size[0] else width / self.px_image_size[0]


StopRule = Literal["region", "corridor", "either"]


class StopRegionConfig(_Strict):
    """Emergency-braking rule: stop when a watched box overlaps ``region`` (``rule: region``), when its bottom-centre
    on flat ground lies in the metric ``corridor`` (``rule: corridor``), or when either holds (``rule: either``).

    With ``rule: region`` a ``corridor`` states the ground the region must cover: checked against the camera in use
    (`regions.coverage`); a region rule without one is judged with a warning (its coverage is not checked)."""

    enabled: bool = True
    watched_classes: tuple[str, ...] = expand(DEFAULT_WATCHED)
    rule: StopRule = "region"
    region: Region = WARNING_REGION
    corridor: GroundCorridor | None = Field(
        default=None, description="the ego's path on the ground: the stop rule (corridor, either) or what the "
        "region must cover (region)")
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    min_overlap_px: float = Field(default=0.0, ge=0.0, description="intersection area must exceed this (rule: region)")
    source: Literal["detections", "ground_truth"] = "detections"

    @field_validator("watched_classes")
    @classmethod
    def _expand(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _expand_watched(value)

    @model_validator(mode="after")
    def _rule_has_its_region(self) -> StopRegionConfig:
        if self.rule != "region" and self.corridor is None:
            raise ValueError(f"rule: {self.rule} needs a corridor: {{half_width_m, near_m, far_m[, braking]}}")
        return self

    @property
    def uses_region(self) -> bool:
        """The image rectangle stops the car (rules region and either)."""
        return self.rule in ("region", "either")

    @property
    def uses_corridor(self) -> bool:
        """The ground corridor stops the car (rules corridor and either)."""
        return self.rule in ("corridor", "either")


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
