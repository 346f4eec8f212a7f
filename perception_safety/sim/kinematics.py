"""Straight-road kinematics of the builtin backend: ego longitudinal motion, pedestrian walk, collision.

The ego keeps its set speed until braking, then decelerates at ``brake_decel`` to a stop;
collision is an overlap of the ego's footprint, swept over the step, with the pedestrian's.
"""

from __future__ import annotations

from dataclasses import dataclass

from perception_safety.sim.scenario import Control, ScenarioConfig


@dataclass(frozen=True, slots=True)
class Rect:
    """Axis-aligned ground footprint ``[x_min, x_max] x [y_min, y_max]`` (m)."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float

    def overlaps(self, other: Rect) -> bool:
        """Closed-interval overlap on both axes (touching counts as contact)."""
        return (
            self.x_min <= other.x_max
            and other.x_min <= self.x_max
            and self.y_min <= other.y_max
            and other.y_min <= self.y_max
        )


@dataclass(frozen=True, slots=True)
class WorldState:
    """Positions at one frame: ego centre x and speed, pedestrian centre (x, y); collided latch."""

    time: float
    ego_x: float
    ego_speed: float
    ped_x: float
    ped_y: float
    collided: bool = False


def ego_advance(
    x: float, speed: float, control: Control, decel: float, set_speed: float, dt: float
) -> tuple[float, float]:
    """Exact constant-deceleration step: returns (new x, new speed); DRIVE holds the set speed."""
    if control == Control.BRAKE:
        if speed <= 0.0:
            return x, 0.0
        t_stop = speed / decel
        if t_stop <= dt:
            return x + speed * t_stop / 2.0, 0.0
        new_speed = speed - decel * dt
        return x + (speed + new_speed) * dt / 2.0, new_speed
    return x + set_speed * dt, set_speed


def pedestrian_y(cfg: ScenarioConfig, t: float) -> float:
    """Pedestrian lateral position at time ``t``: waits, then walks at constant speed to ``y_end``."""
    p = cfg.pedestrian
    walked = max(0.0, t - p.start_time) * p.speed
    total = abs(p.y_end - p.y_start)
    if walked >= total:
        return p.y_end
    sign = 1.0 if p.y_end > p.y_start else -1.0
    return p.y_start + sign * walked


def ego_rect(cfg: ScenarioConfig, x_from: float, x_to: float) -> Rect:
    """Ego footprint swept from centre ``x_from`` to ``x_to``."""
    e = cfg.ego
    lo, hi = min(x_from, x_to), max(x_from, x_to)
    return Rect(lo - e.length / 2.0, hi + e.length / 2.0, e.lane_y - e.width / 2.0, e.lane_y + e.width / 2.0)


def initial_state(cfg: ScenarioConfig) -> WorldState:
    return WorldState(0.0, 0.0, cfg.ego.speed, cfg.pedestrian.x, pedestrian_y(cfg, 0.0))


def advance(cfg: ScenarioConfig, state: WorldState, control: Control) -> tuple[WorldState, bool]:
    """One frame step; returns the new state and whether a collision *starts* in this step.

    After a collision the ego and the pedestrian stop where they are (the episode goes on, the
    collision is reported once).
    """
    dt = cfg.dt
    t = state.time + dt
    if state.collided:
        return WorldState(t, state.ego_x, 0.0, state.ped_x, state.ped_y, True), False
    x, v = ego_advance(state.ego_x, state.ego_speed, control, cfg.ego.brake_decel, cfg.ego.speed, dt)
    py = pedestrian_y(cfg, t)
    # The pedestrian moves by at most speed*dt (< its own depth at default values), the ego's sweep
    # is covered by the swept rectangle, so contact inside the step is not missed.
    p_sweep = Rect(
        state.ped_x - cfg.pedestrian.width / 2.0,
        state.ped_x + cfg.pedestrian.width / 2.0,
        min(state.ped_y, py) - cfg.pedestrian.depth / 2.0,
        max(state.ped_y, py) + cfg.pedestrian.depth / 2.0,
    )
    hit = ego_rect(cfg, state.ego_x, x).overlaps(p_sweep)
    if hit:
        return WorldState(t, x, 0.0, state.ped_x, py, True), True
    return WorldState(t, x, v, state.ped_x, py, False), False


def stopping_distance(speed: float, decel: float) -> float:
    """v^2 / (2 a): distance travelled while braking from ``speed`` to rest."""
    return speed * speed / (2.0 * decel)
