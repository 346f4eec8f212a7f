"""The ``pcd`` config section: method, score model (Gaussian or hurdle), change points, grid, bootstrap."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from perception_safety.evaluation.pcd.pspline import DEFAULT_LAMBDA_GRID

Method = Literal["paper", "reference"]
Model = Literal["gaussian", "hurdle", "auto"]
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.1 * i, 10) for i in range(1, 10))
#: Segments shorter than this are not tested for a further change point (per method).
DEFAULT_MIN_SEGMENT = {"paper": 30, "reference": 130}
#: Paper mode: fewest samples on each side of a split, so every sigma comes from at least this many residuals
#: (the relative standard error of a sigma from n residuals is about 1/sqrt(2n): 13 % at n = 30).
DEFAULT_MIN_SIDE = 30


class PCDSampleConfig(BaseModel):
    """How samples are extracted from Frames (ignored for CSV input)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    class_id: str | None = None
    track_id: str | None = None
    iou_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    class_aware: bool = False
    input: Literal["auto", "raw", "thresholded"] = Field(
        default="auto",
        description="raw: highest score of the target's boxes among detections and recorded sub-threshold "
        "candidates (the paper's input, no score threshold); thresholded: the reported detections only; "
        "auto: raw where candidates were recorded",
    )


class PCDBootstrapConfig(BaseModel):
    """Bootstrap intervals of PCD and mPCD: whole tracks or episodes are resampled (frames are correlated)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    n_boot: int = Field(default=200, ge=0, description="resamples; 0 switches the bootstrap off")
    seed: int = Field(default=0, ge=0)
    level: float = Field(default=0.95, gt=0.0, lt=1.0, description="two-sided percentile interval")
    unit: Literal["track", "episode"] = Field(
        default="track", description="resampling unit for Frames input: a track of one bag/file, or a whole bag/file"
    )


class PCDConfig(BaseModel):
    """The ``pcd`` config section (defaults = the paper's settings, plus the hurdle model for missed targets)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    method: Method = "paper"
    model: Model = Field(
        default="auto",
        description="gaussian: eq. 9 on all samples; hurdle: P(y > y_t | x) = p_det(x) P(y > y_t | detected, x); "
        "auto: hurdle when the share of zero scores exceeds hurdle_zero_share (gaussian in reference mode)",
    )
    hurdle_zero_share: float = Field(default=0.05, ge=0.0, le=1.0)
    n_splines: int = Field(default=10, ge=4)
    spline_degree: int = Field(default=3, ge=1, le=5)
    penalty_order: int = Field(default=2, ge=1)
    lam: float = Field(default=0.6, ge=0.0, allow_inf_nan=False)
    lam_selection: Literal["fixed", "aic", "bic", "gcv"] = "fixed"
    lam_grid: tuple[float, ...] = DEFAULT_LAMBDA_GRID
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_segment_size: int | None = Field(default=None, ge=3)
    min_side: int | None = Field(default=None, ge=1)
    fit_check_alpha: float = Field(
        default=0.001, gt=0.0, lt=1.0, description="warn when the residual bin means reject a good mean fit"
    )
    y_t: float = Field(default=0.5, allow_inf_nan=False)
    p_t: float = Field(default=0.5, ge=0.0, le=1.0)
    grid_y_t: tuple[float, ...] = DEFAULT_GRID
    grid_p_t: tuple[float, ...] = DEFAULT_GRID
    samples: PCDSampleConfig = PCDSampleConfig()
    bootstrap: PCDBootstrapConfig = PCDBootstrapConfig()

    @field_validator("grid_y_t", "grid_p_t", "lam_grid")
    @classmethod
    def _non_empty_finite(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if len(v) == 0 or not all(np.isfinite(v)):
            raise ValueError("must be a non-empty list of finite numbers")
        return v

    @model_validator(mode="after")
    def _reference_is_fixed(self) -> PCDConfig:
        if self.method == "reference" and self.lam_selection != "fixed":
            raise ValueError("method 'reference' fits with a fixed lambda (lam_selection must be 'fixed')")
        if self.method == "reference" and self.model == "hurdle":
            raise ValueError("method 'reference' has the Gaussian model only (model must be 'gaussian' or 'auto')")
        if self.penalty_order >= self.n_splines:
            raise ValueError("penalty_order must be smaller than n_splines")
        return self

    def segment_minimum(self) -> int:
        """The effective minimum size of a segment to be tested."""
        if self.min_segment_size is not None:
            return self.min_segment_size
        return DEFAULT_MIN_SEGMENT[self.method]

    def side_minimum(self) -> int:
        """Paper mode: the fewest samples a split may leave on either side (sigma never from fewer)."""
        return self.min_side if self.min_side is not None else DEFAULT_MIN_SIDE
