"""Straight-road kinematics and collision: braking in time avoids the pedestrian, braking late does not."""

from __future__ import annotations

import math

import pytest

from perception_safety.sim.kinematics import (
    Rect,
    advance,
    ego_advance,
    initial_state,
    pedestrian_y,
    stopping_distance,
)
from perception_safety.sim.scenario import Control, ScenarioConfig


def _run(cfg: ScenarioConfig, brake_from: int | None) -> tuple[bool, float, int]:
    """Drive, brake from frame ``brake_from``; returns (collided, final ego x, collision frame or -1)."""
    s = initial_state(cfg)
    hit_at = -1
    for t in range(1, cfg.frames):
        control = Control.BRAKE if brake_from is not None and t - 1 >= brake_from else Control.DRIVE
        s, hit = advance(cfg, s, control)
        if hit:
            hit_at = t
    return s.collided, s.ego_x, hit_at


def test_ego_braking_step_is_exact_constant_deceleration() -> None:
    # 8 m/s, 8 m/s^2, dt 0.05: v = 7.6, x = (8 + 7.6) / 2 * 0.05 = 0.39
    x, v = ego_advance(0.0, 8.0, Control.BRAKE, 8.0, 8.0, 0.05)
    assert v == pytest.approx(7.6)
    assert x == pytest.approx(0.39)
    # a step in which the car stops: 0.2 m/s needs 0.025 s, travels 0.2 * 0.025 / 2
    x, v = ego_advance(1.0, 0.2, Control.BRAKE, 8.0, 8.0, 0.05)
    assert v == 0.0
    assert x == pytest.approx(1.0 + 0.0025)
    assert ego_advance(3.0, 0.0, Control.BRAKE, 8.0, 8.0, 0.05) == (3.0, 0.0)
    assert ego_advance(3.0, 8.0, Control.DRIVE, 8.0, 8.0, 0.05) == pytest.approx((3.4, 8.0))


def test_stopping_distance_matches_integrated_braking() -> None:
    cfg = ScenarioConfig()
    x, v = 0.0, cfg.ego.speed
    while v > 0:
        x, v = ego_advance(x, v, Control.BRAKE, cfg.ego.brake_decel, cfg.ego.speed, cfg.dt)
    assert x == pytest.approx(8.0**2 / (2 * 8.0))
    assert stopping_distance(8.0, 8.0) == pytest.approx(4.0)


def test_pedestrian_waits_then_walks_then_stops_at_goal() -> None:
    cfg = ScenarioConfig()
    p = cfg.pedestrian
    assert pedestrian_y(cfg, 0.0) == p.y_start
    assert pedestrian_y(cfg, p.start_time) == p.y_start
    assert pedestrian_y(cfg, p.start_time + 1.0) == pytest.approx(p.y_start + p.speed)
    assert pedestrian_y(cfg, 1e3) == p.y_end


def test_no_braking_hits_the_crossing_pedestrian() -> None:
    cfg = ScenarioConfig()
    collided, _, hit_at = _run(cfg, None)
    assert collided
    # hand computation: the pedestrian's near edge reaches the ego's left... right side (y = -0.9 - 0.2) at
    # t = 2.5 + (4.8 - 1.1) / 2 = 4.35 s; the ego's front (x + 2.25) reaches the pedestrian's rear edge
    # (40 - 0.25) at t = 37.5 / 8 = 4.6875 s -> first contact in the step ending at frame ceil(4.6875 * 20) = 94.
    assert hit_at == math.ceil(37.5 / 8.0 * 20.0)


def test_braking_in_time_avoids_and_late_braking_does_not() -> None:
    cfg = ScenarioConfig()
    # the ego stops after v^2 / 2a = 4 m; its front must stay before the pedestrian's rear edge at 39.75 m
    last_safe_x = 39.75 - cfg.ego.length / 2 - stopping_distance(cfg.ego.speed, cfg.ego.brake_decel)
    safe_frame = int(last_safe_x / (cfg.ego.speed * cfg.dt)) - 1  # brake one frame before the limit
    collided, x, _ = _run(cfg, safe_frame)
    assert not collided
    assert x + cfg.ego.length / 2 < 39.75
    late_frame = safe_frame + 10  # 4 m later: the car cannot stop before the crossing
    collided, _, _ = _run(cfg, late_frame)
    assert collided


def test_collision_is_reported_once_and_freezes_the_world() -> None:
    cfg = ScenarioConfig()
    s = initial_state(cfg)
    hits = 0
    for _ in range(cfg.frames - 1):
        s, hit = advance(cfg, s, Control.DRIVE)
        hits += hit
    assert hits == 1
    assert s.collided and s.ego_speed == 0.0


def test_rect_overlap_is_closed() -> None:
    a = Rect(0, 1, 0, 1)
    assert a.overlaps(Rect(1, 2, 0, 1))
    assert not a.overlaps(Rect(1.01, 2, 0, 1))
    assert not a.overlaps(Rect(0, 1, 1.5, 2))
