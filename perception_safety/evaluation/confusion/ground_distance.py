"""A distance for a detection that matches no ground truth: where its box meets a flat ground (issue 24 item 4).

An unmatched detection (a false positive) has no annotated distance, yet precision per distance bin needs
one. With the camera's vertical focal length ``fy`` and principal row ``cy`` (pixels), its height above the
ground ``h`` (m) and pitch ``θ`` (rad, positive looks up), the ray through the box's bottom edge row ``v``
meets the ground at the forward distance ``d = h / tan(atan((v - cy) / fy) - θ)`` (flat ground, object
standing on it). A bottom edge at or above the horizon has no ground point: such detections keep no
distance and are counted pooled only. The geom helper's camera geometry (monitors/) may replace this
local estimate; its assumptions are stated in docs/confusion-matrices.md.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class GroundCamera(BaseModel):
    """What the estimate needs: vertical intrinsics and the camera's mounting (``confusion.ground_camera``)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    fy: float = Field(gt=0.0)
    """Vertical focal length (px)."""
    cy: float
    """Principal point row (px, image top = 0)."""
    height_m: float = Field(gt=0.0)
    """Camera height above the ground (m)."""
    pitch_rad: float = Field(0.0, ge=-math.pi / 4, le=math.pi / 4)
    """Positive looks up."""


def ground_distance(bottom_px: np.ndarray, cam: GroundCamera) -> np.ndarray:
    """Forward ground distance (m) of each box bottom row; NaN at or above the horizon."""
    v = np.asarray(bottom_px, dtype=np.float64)
    angle = np.arctan((v - cam.cy) / cam.fy) - cam.pitch_rad  # below the optical axis is positive
    with np.errstate(divide="ignore", invalid="ignore"):
        d = cam.height_m / np.tan(angle)
    return np.where(angle > 1e-6, d, np.nan)


def detection_distances(carried: np.ndarray, bottom_px: np.ndarray, cam: GroundCamera | None) -> np.ndarray:
    """The one distance estimate of detections, shared by precision per bin and AP per bin: the distance the data
    carry (a 3D object list's position) first, else the flat-ground estimate from the box bottom (with a camera),
    else NaN (unknown: pooled only)."""
    carried = np.asarray(carried, dtype=np.float64)
    estimate = ground_distance(bottom_px, cam) if cam is not None else np.full(len(carried), np.nan)
    return np.where(np.isfinite(carried), carried, estimate)
