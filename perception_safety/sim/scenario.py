"""The pedestrian-crossing scenario contract shared by the builtin and the CARLA backend.

Geometry follows the SG/RH/AC paper's CARLA use case (Section III-B): the ego drives a straight
road at a set speed, a pedestrian emerges from between parked cars and crosses at 2 m/s, 20 fps,
T = 220 frames. All positions are in the *scenario frame*: origin at the ego's start (ground
level), x along the road in the driving direction, y to the left, z up (ROS REP-103 axes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from perception_safety.core.types import EgoState, GroundTruthObject


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class EgoConfig(_Strict):
    """Ego vehicle: set speed (m/s), footprint (m) and braking deceleration (m/s^2)."""

    speed: float = Field(default=8.0, gt=0.0)
    length: float = Field(default=4.5, gt=0.0)
    width: float = Field(default=1.8, gt=0.0)
    height: float = Field(default=1.5, gt=0.0)
    brake_decel: float = Field(default=8.0, gt=0.0, description="emergency braking deceleration, m/s^2")
    lane_y: float = Field(default=0.0, description="lateral position of the ego lane centre")


class ParkedCarConfig(_Strict):
    """A parked car: centre (x, y) in the scenario frame and its size."""

    x: float
    y: float
    length: float = Field(default=4.5, gt=0.0)
    width: float = Field(default=1.8, gt=0.0)
    height: float = Field(default=1.5, gt=0.0)
    color: tuple[int, int, int] = (150, 30, 30)


class PedestrianConfig(_Strict):
    """The crossing pedestrian: start point, walking speed and start time."""

    x: float = 40.0
    y_start: float = -4.8
    y_end: float = 6.5
    speed: float = Field(default=2.0, gt=0.0)
    start_time: float = Field(default=2.5, ge=0.0, description="seconds after episode start")
    width: float = Field(default=0.5, gt=0.0)
    depth: float = Field(default=0.4, gt=0.0)
    height: float = Field(default=1.8, gt=0.0)


class RoadConfig(_Strict):
    """Road layout (ego lane centred on ``ego.lane_y``; one opposite lane to the left)."""

    lane_width: float = Field(default=3.5, gt=0.0)
    parking_width: float = Field(default=2.4, ge=0.0)
    sidewalk_width: float = Field(default=3.0, ge=0.0)
    building_setback: float = Field(default=1.0, ge=0.0, description="building facades behind the sidewalk")


class CameraConfig(_Strict):
    """Pinhole camera on the ego: image size, horizontal field of view and mounting (ego frame)."""

    width: int = Field(default=1280, ge=16, le=8192)
    height: int = Field(default=720, ge=16, le=8192)
    fov_deg: float = Field(default=90.0, gt=1.0, lt=179.0)
    x: float = Field(default=1.5, description="forward of the ego centre, m")
    y: float = 0.0
    z: float = Field(default=1.6, gt=0.0, description="height above ground, m")
    pitch_deg: float = Field(default=0.0, description="positive looks up (CARLA convention)")


def _default_parked() -> tuple[ParkedCarConfig, ...]:
    return (
        ParkedCarConfig(x=20.0, y=-3.0, color=(40, 60, 140)),
        ParkedCarConfig(x=27.0, y=-3.0, color=(170, 170, 175)),
        ParkedCarConfig(x=34.2, y=-3.0, color=(150, 30, 30)),
        ParkedCarConfig(x=45.8, y=-3.0, color=(30, 30, 35)),
        ParkedCarConfig(x=53.0, y=-3.0, color=(200, 190, 60)),
    )


class ScenarioConfig(_Strict):
    """The scenario: timing, ego, parked cars, pedestrian, road and camera."""

    fps: float = Field(default=20.0, gt=0.0)
    frames: int = Field(default=220, ge=1, description="T, frames per episode")
    ego: EgoConfig = EgoConfig()
    pedestrian: PedestrianConfig = PedestrianConfig()
    parked_cars: tuple[ParkedCarConfig, ...] = Field(default_factory=_default_parked)
    road: RoadConfig = RoadConfig()
    camera: CameraConfig = CameraConfig()

    @property
    def dt(self) -> float:
        return 1.0 / self.fps

    @model_validator(mode="after")
    def _check(self) -> ScenarioConfig:
        if self.pedestrian.y_end == self.pedestrian.y_start:
            raise ValueError("pedestrian.y_end must differ from pedestrian.y_start")
        return self


class Control(enum.IntEnum):
    """What the planner asks for at one step: keep the set speed, or emergency-brake."""

    DRIVE = 0
    BRAKE = 1


@dataclass(frozen=True)
class Observation:
    """What a backend returns per frame: image, visible ground truth, ego state and collision flag.

    ``collision`` is True on the frame in which the ego first touches the pedestrian.
    """

    index: int
    stamp_ns: int
    image: np.ndarray
    ground_truth: tuple[GroundTruthObject, ...]
    ego: EgoState
    collision: bool
    collided: bool


class Backend(Protocol):
    """A simulator running the scenario: ``reset`` gives frame 0, ``step`` applies a control."""

    name: str

    def reset(self, seed: int) -> Observation: ...

    def step(self, control: Control) -> Observation: ...

    def close(self) -> None: ...
