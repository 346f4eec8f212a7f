"""Config forms of a monitor region (pydantic): an image rectangle in fractions or in pixels, a ground corridor.

A pixel rectangle always carries the image size it was drawn for (checked against the camera in use); a
fraction rectangle scales with the image; the corridor is metric and needs the camera model (CameraInfo
intrinsics plus `CameraMount`). Frame conventions: docs/monitors.md, "Regions".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

#: decimals kept when a fraction is scaled to pixels: 0.2140625 * 1280 gives 274.0, not 273.99999999999997
PIXEL_DECIMALS = 6
#: slack on the [0, 1] bounds of a fraction (written decimals such as 0.5727 + 0.2141)
FRACTION_SLACK = 1e-6


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Region(_Strict):
    """Image rectangle ``left, top, width, height`` (origin top-left): ``units: fraction`` of the image's width and
    height, or ``units: px`` together with the ``image_size: [width, height]`` it was drawn for."""

    units: Literal["fraction", "px"]
    left: float
    top: float
    width: float = Field(gt=0)
    height: float = Field(gt=0)
    image_size: tuple[PositiveInt, PositiveInt] | None = Field(
        default=None, description="px only: (width, height) of the image the rectangle was drawn on")

    @model_validator(mode="before")
    @classmethod
    def _need_units(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("units") is None and {"left", "width"} <= set(data):
            raise ValueError(
                "a region needs units: 'fraction' (of the image's width and height: works on any camera) or 'px' "
                "together with image_size: [width, height], the image it was drawn for")
        return data

    @model_validator(mode="after")
    def _check(self) -> Region:
        if self.units == "px":
            if self.image_size is None:
                raise ValueError("a pixel region needs image_size: [width, height], the image it was drawn for "
                                 "(or give it as fractions with units: fraction)")
            return self
        if self.image_size is not None:
            raise ValueError("image_size belongs to pixel regions (units: px); a fraction region fits every image")
        for lo, extent, what in ((self.left, self.width, "left/width"), (self.top, self.height, "top/height")):
            if lo < -FRACTION_SLACK or lo + extent > 1.0 + FRACTION_SLACK:
                raise ValueError(f"{what} {lo:g}/{extent:g} leave the image: fractions lie in [0, 1] "
                                 "(pixel values need units: px and image_size)")
        return self

    @classmethod
    def fraction(cls, left: float, top: float, width: float, height: float) -> Region:
        """A rectangle in fractions of the image."""
        return cls(units="fraction", left=left, top=top, width=width, height=height)

    @classmethod
    def px(cls, left: float, top: float, width: float, height: float, image_size: tuple[int, int]) -> Region:
        """A pixel rectangle drawn on an image of ``image_size = (width, height)``."""
        return cls(units="px", left=left, top=top, width=width, height=height, image_size=image_size)

    @classmethod
    def of_pixels(cls, left: float, top: float, width: float, height: float, image_size: tuple[int, int]) -> Region:
        """The fraction form of a pixel rectangle drawn on ``image_size`` (the same pixels on that image)."""
        w, h = image_size
        return cls.fraction(left / w, top / h, width / w, height / h)

    def describe(self) -> str:
        """``fraction (l, t, w, h)`` or ``px (l, t, w, h) drawn for WxH``."""
        body = f"({self.left:g}, {self.top:g}, {self.width:g}, {self.height:g})"
        if self.units == "px":
            assert self.image_size is not None
            return f"px {body} drawn for {self.image_size[0]}x{self.image_size[1]}"
        return f"fraction {body}"


class Braking(_Strict):
    """Far edge from the ego speed v: ``far = near + v t_r + v^2 / (2 a) + margin`` (reaction, braking, margin)."""

    deceleration_mps2: float = Field(gt=0.0, le=15.0, description="a, the braking deceleration")
    reaction_time_s: float = Field(default=0.0, ge=0.0, le=10.0, description="t_r, travelled before braking")
    margin_m: float = Field(default=2.0, gt=0.0, le=100.0, description="kept beyond the stopping point")

    def far(self, near_m: float, speed_mps: float) -> float:
        """Far edge (m) of the corridor at forward speed ``speed_mps`` (reversing counts as standing)."""
        v = max(0.0, float(speed_mps))
        return near_m + v * self.reaction_time_s + v * v / (2.0 * self.deceleration_mps2) + self.margin_m


class GroundCorridor(_Strict):
    """The ego's path on flat ground: ``|y| <= half_width_m`` and ``near_m <= x <= far_m`` (metres, ground frame of
    the camera: origin below the camera, x forward, y left; `CameraMount`). With ``braking`` and a known ego speed
    the far edge follows the stopping distance; without a speed it is ``far_m``."""

    half_width_m: float = Field(gt=0.0, le=100.0)
    near_m: float = Field(default=0.0, ge=0.0, le=1000.0)
    far_m: float = Field(gt=0.0, le=1000.0)
    braking: Braking | None = None
    bottom_edge_px: float = Field(default=1.0, ge=0.0, le=100.0,
                                  description="a box reaching this close to the image's bottom edge is cut off: "
                                  "its foot is nearer than the image shows, so it counts as inside")

    @model_validator(mode="after")
    def _order(self) -> GroundCorridor:
        if self.far_m <= self.near_m:
            raise ValueError(f"far_m ({self.far_m:g}) must exceed near_m ({self.near_m:g})")
        return self

    def far_at(self, speed_mps: float | None) -> float:
        """The far edge used for a frame: from ``braking`` when the ego speed is known, else ``far_m``."""
        if self.braking is None or speed_mps is None:
            return self.far_m
        return self.braking.far(self.near_m, speed_mps)

    def describe(self) -> str:
        far = f"{self.far_m:g} m" if self.braking is None else (
            f"near + braking at {self.braking.deceleration_mps2:g} m/s^2 (else {self.far_m:g} m)")
        return f"ground corridor |y| <= {self.half_width_m:g} m, x from {self.near_m:g} m to {far}"


class Pinhole(_Strict):
    """Intrinsics (pixels) for when no CameraInfo is available, with the image size they belong to."""

    fx: float = Field(gt=0.0)
    fy: float = Field(gt=0.0)
    cx: float
    cy: float


class CameraMount(_Strict):
    """The camera of the monitored vehicle: mounting for metric regions, fall-backs for missing messages.

    Ground frame: origin on flat ground below the optical centre, x forward along the ego's heading, y left,
    z up (REP-103). ``pitch_deg`` positive looks up (as CARLA and the builtin simulator); no roll, no yaw.
    """

    height_m: float | None = Field(default=None, gt=0.0, le=50.0, description="optical centre above the ground")
    pitch_deg: float = Field(default=0.0, ge=-89.0, le=89.0, description="positive looks up; a camera tilted down "
                             "has a negative pitch")
    lateral_offset_m: float = Field(default=0.0, ge=-10.0, le=10.0,
                                    description="camera left of the ego centreline (the corridor is centred on it)")
    image_size: tuple[PositiveInt, PositiveInt] | None = Field(
        default=None, description="(width, height) when frames carry neither an image nor a CameraInfo")
    intrinsics: Pinhole | None = Field(default=None, description="when no CameraInfo is received (needs image_size)")

    @model_validator(mode="after")
    def _intrinsics_with_size(self) -> CameraMount:
        if self.intrinsics is not None and self.image_size is None:
            raise ValueError("intrinsics need the image_size they were calibrated for")
        return self
