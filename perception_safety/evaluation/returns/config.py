"""Configuration of the SG/RH/AC returns (the ``returns`` section) and the error of inconsistent inputs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.errors import PerceptionSafetyError


class ReturnsError(PerceptionSafetyError):
    """Inputs to the SG/RH/AC computation are inconsistent (missing rollouts, missing frames, bad labels)."""


# ---------------------------------------------------------------- config


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class E1Config(_Strict):
    """The matching rule that decides tau (eq. 14-15): an error is any false positive or false negative."""

    iou_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    score_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    class_aware: bool = True
    classes: tuple[str, ...] | None = Field(default=None, description="only these classes count; None = all")
    rollout: str = Field(default="perception", description="rollout whose frames and alarms E1 is computed on")


class E2Config(_Strict):
    """Scheme E2 options (eq. 16-17)."""

    horizon: int | None = Field(
        default=None,
        ge=2,
        description="T; None = 'horizon' (or 'frames') of the episode meta, else the longest rollout",
    )
    collision_once: bool = Field(default=True, description="only the first collision frame of a rollout counts")


class ReturnsConfig(_Strict):
    """The ``returns`` section of ``config/monitors.yaml``."""

    e1: E1Config = E1Config()
    e2: E2Config = E2Config()
