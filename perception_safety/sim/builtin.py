"""The builtin backend (embedded default): straight-road kinematics, pinhole camera, software renderer.

Ground truth is every actor whose projected 3D box is in the image and of which at least
``min_visible_fraction`` of the silhouette is unoccluded (from the renderer's id mask); boxes are the
projections of the actors' 3D boxes (amodal), as in the CARLA backend.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from perception_safety.core.types import Box, EgoState, GroundTruthObject
from perception_safety.sim.camera import cuboid_corners, project_cuboid
from perception_safety.sim.kinematics import WorldState, advance, initial_state
from perception_safety.sim.render import Actor, Part, Renderer, SceneTextures
from perception_safety.sim.scenario import Control, Observation, ScenarioConfig

PEDESTRIAN_ID = 1


class BuiltinConfig(BaseModel):
    """Builtin backend options (key ``builtin`` of the ``episodes`` section)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    texture_seed: int = 7
    min_visible_fraction: float = Field(default=0.2, ge=0.0, le=1.0)
    pedestrian_class: str = "pedestrian"
    car_class: str = "car"
    background_cache: int = Field(default=96, ge=0, description="rendered backgrounds kept per process (2.7 MB each)")


def pedestrian_parts(cfg: ScenarioConfig, x: float, y: float) -> tuple[Part, ...]:
    """Legs, torso and head of the pedestrian standing at (x, y)."""
    p = cfg.pedestrian
    h = p.height
    hw, hd = p.width / 2.0, p.depth / 2.0
    return (
        Part((x, y, 0.47 * h / 2.0), (hw * 0.7, hd * 0.8, 0.47 * h / 2.0), (40, 45, 70)),
        Part((x, y, 0.47 * h + 0.36 * h / 2.0), (hw, hd, 0.36 * h / 2.0), (200, 60, 40)),
        Part((x, y, 0.83 * h + 0.17 * h / 2.0), (hw * 0.45, hd * 0.55, 0.17 * h / 2.0), (205, 160, 130)),
    )


def car_parts(
    x: float, y: float, length: float, width: float, height: float, color: tuple[int, int, int]
) -> tuple[Part, ...]:
    """Body, cabin and wheel band of a car centred at (x, y)."""
    body_lo, body_hi = 0.3 * height, 0.62 * height
    return (
        Part((x, y, 0.3 * height / 2.0), (length * 0.42, width * 0.46, 0.3 * height / 2.0), (25, 25, 25)),
        Part((x, y, (body_lo + body_hi) / 2.0), (length / 2.0, width / 2.0, (body_hi - body_lo) / 2.0), color),
        Part(
            (x - 0.05 * length, y, (body_hi + height) / 2.0),
            (length * 0.28, width * 0.42, (height - body_hi) / 2.0),
            (60, 75, 90),
        ),
    )


class BuiltinBackend:
    """Runs the scenario in-process; deterministic for a given config (the seed drives nothing random)."""

    name = "builtin"

    def __init__(
        self, cfg: ScenarioConfig, options: BuiltinConfig | None = None, renderer: Renderer | None = None
    ) -> None:
        self.cfg = cfg
        self.options = options or BuiltinConfig()
        self.renderer = renderer or Renderer(
            cfg, SceneTextures(cfg, self.options.texture_seed), self.options.background_cache
        )
        self._state: WorldState = initial_state(cfg)
        self._index = 0
        self._cars = [
            (i + 2, car_parts(c.x, c.y, c.length, c.width, c.height, c.color), c) for i, c in enumerate(cfg.parked_cars)
        ]

    # -- contract -------------------------------------------------------------------------------
    def reset(self, seed: int = 0) -> Observation:
        """Back to frame 0 (the seed is accepted for the contract; the builtin world is deterministic)."""
        self._state = initial_state(self.cfg)
        self._index = 0
        return self._observe(collision=False)

    def step(self, control: Control) -> Observation:
        self._state, hit = advance(self.cfg, self._state, control)
        self._index += 1
        return self._observe(collision=hit)

    def close(self) -> None:
        """Nothing to release."""

    # -- internals ------------------------------------------------------------------------------
    @property
    def state(self) -> WorldState:
        """The world state (frozen, hashable): equal states render identical observations."""
        return self._state

    def sync_from(self, other: BuiltinBackend) -> None:
        """Take over another instance's world state and frame index (lockstep rollouts sharing a step)."""
        self._state = other._state
        self._index = other._index

    def _actors(self) -> list[Actor]:
        s = self._state
        actors = [Actor(PEDESTRIAN_ID, pedestrian_parts(self.cfg, s.ped_x, s.ped_y))]
        actors.extend(Actor(aid, parts) for aid, parts, _ in self._cars)
        return actors

    def _observe(self, collision: bool) -> Observation:
        s = self._state
        cfg = self.cfg
        actors = self._actors()
        image, mask, silhouettes = self.renderer.render(s.ego_x, actors)
        p = cfg.pedestrian
        boxes3d = [(PEDESTRIAN_ID, (s.ped_x, s.ped_y, p.height / 2.0), (p.width / 2, p.depth / 2, p.height / 2),
                    self.options.pedestrian_class, "pedestrian_0")]
        for aid, _, c in self._cars:
            boxes3d.append((aid, (c.x, c.y, c.height / 2.0), (c.length / 2, c.width / 2, c.height / 2),
                            self.options.car_class, f"car_{aid - 2}"))
        gts = []
        for aid, center, extent, cls, track in boxes3d:
            ego_center = np.array([center[0] - s.ego_x, center[1], center[2]])
            corners = self.renderer.pose.ego_to_camera(cuboid_corners(ego_center, np.array(extent)))
            box = project_cuboid(self.renderer.k, corners)
            if box is None:
                continue
            silhouette = silhouettes.get(aid, 0)
            if silhouette == 0 or _visible_pixels(mask, box, aid) / silhouette < self.options.min_visible_fraction:
                continue
            gts.append(GroundTruthObject.at_position(box, cls, ego_center, track))
        ego = EgoState(s.ego_x, cfg.ego.lane_y, 0.0, s.ego_speed)
        stamp = round(self._index * 1e9 / cfg.fps)
        return Observation(self._index, stamp, image, tuple(gts), ego, collision, s.collided)


def _visible_pixels(mask: np.ndarray, box: Box, aid: int) -> int:
    """Pixels of actor ``aid`` in the id mask (searched inside its projected box, which contains them)."""
    h, w = mask.shape
    x0, y0 = max(0, int(box.x_min) - 1), max(0, int(box.y_min) - 1)
    x1, y1 = min(w, int(box.x_max) + 2), min(h, int(box.y_max) + 2)
    return int(np.count_nonzero(mask[y0:y1, x0:x1] == aid))
