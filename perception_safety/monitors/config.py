"""Pydantic config models of the monitors (YAML section ``monitors`` of ``config/monitors.yaml``).

Defaults are the constants of the SG/RH/AC paper's public CARLA code (DESIGN.md): contrast
threshold 1580 at 1280x720, warning region (274, 468, 733, 252), danger region (385, 470, 510, 250).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perception_safety.core.types import Box


class _Strict(BaseModel):
    # NaN/inf are refused: a NaN threshold or region edge makes every comparison false, silently disabling an alarm
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Region(_Strict):
    """Pixel rectangle ``left, top, width, height`` (origin top-left), as the paper's code states them."""

    left: float
    top: float
    width: float = Field(gt=0)
    height: float = Field(gt=0)

    @property
    def box(self) -> Box:
        """The region as a `Box` ``(x_min, y_min, x_max, y_max)``."""
        return Box(self.left, self.top, self.left + self.width, self.top + self.height)

    def as_array(self) -> tuple[float, float, float, float]:
        return (self.left, self.top, self.left + self.width, self.top + self.height)


WARNING_REGION = Region(left=274, top=468, width=733, height=252)
DANGER_REGION = Region(left=385, top=470, width=510, height=250)

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
    watched_classes: tuple[str, ...] = ("person", "pedestrian")
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


class StopRegionConfig(_Strict):
    """Emergency-braking rule: stop when a watched box overlaps ``region``."""

    enabled: bool = True
    watched_classes: tuple[str, ...] = ("person", "pedestrian")
    region: Region = WARNING_REGION
    min_score: float = Field(default=0.0, ge=0.0, le=1.0)
    min_overlap_px: float = Field(default=0.0, ge=0.0, description="intersection area must exceed this")
    source: Literal["detections", "ground_truth"] = "detections"


class MonitorsConfig(_Strict):
    """The ``monitors`` section: the runtime monitor m_f (contrast + plausibility) and the stop rule."""

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
