"""Judging one rollout frame: the runtime monitor, the stop rule and the planner's brake latch (SG/RH/AC paper,
Section III-B: the monitor acts only in the monitored rollout); the step is recorded for the log and the bag."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Frame
from perception_safety.io.episode_log import EpisodeStep
from perception_safety.monitors.composite import build_stop_rule
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.scenario import Control, Observation
from perception_safety.sim.sweep.planning import EpisodeSpec
from perception_safety.sim.sweep.rollout import MONITORED, Rollout, StageTimes

STOPPED_SPEED = 0.05  # m/s: below this the ego counts as stopped (CARLA reports tiny residual speeds)


def judge(
    cfg: EpisodesConfig, monitors: MonitorsConfig, spec: EpisodeSpec, roll: Rollout, o: Observation,
    img: np.ndarray, payload: bytes | None, dets: Any, times: StageTimes,
) -> Control:
    """Monitor, stop rule and planner for one rollout frame (``img``: the image the monitors see, ``payload``:
    its recorded JPEG); records the step; returns the next control."""
    t0 = time.perf_counter()
    cam = spec.scenario.camera  # the simulated camera's intrinsics (recorded as the bags' CameraInfo too)
    frame = Frame(o.stamp_ns, tuple(dets), o.ground_truth, o.ego, img, "camera", getattr(dets, "candidates", None),
                  camera=_intrinsics(cam.width, cam.height, cam.fov_deg))
    verdict = roll.monitor.evaluate(frame)
    stop_rule = _stop_rule(monitors)
    stop_result = stop_rule.update(frame)
    stop_request = stop_result.alarm
    alarm = verdict.combined.alarm
    want = stop_request or (roll.name == MONITORED and alarm)
    roll.braking = (roll.braking and cfg.latch_brake) or want
    t1 = time.perf_counter()
    times.monitor += t1 - t0
    if alarm and roll.first_alarm is None:
        roll.first_alarm = o.index
    if roll.braking and roll.first_stop is None:
        roll.first_stop = o.index
    running = o.ego.speed > STOPPED_SPEED
    roll.collided = roll.collided or o.collision
    roll.steps.append(
        EpisodeStep(
            t=o.index,
            running=running,
            collision=o.collision,
            stop=roll.braking,
            alarm=alarm,
            frame=replace(frame, image=None),
            reasons=verdict.combined.reasons,
            values=dict(verdict.combined.values),
        )
    )
    rec = cfg.record
    if rec.bags:
        image = img if rec.images == "raw" else None
        roll.bag_frames.append(replace(frame, image=image))
        roll.bag_jpegs.append(payload)
        roll.bag_results.append((*verdict.parts, verdict.combined, stop_result))
    times.record += time.perf_counter() - t1
    last = o.index >= spec.scenario.frames - 1
    if o.collided and cfg.end_when_stopped:
        roll.done, roll.end_reason = True, "collision"
    elif cfg.end_when_stopped and roll.braking and not running:
        roll.done, roll.end_reason = True, "stopped"
    elif last:
        roll.done, roll.end_reason = True, "horizon"
    return Control.BRAKE if roll.braking else Control.DRIVE



@lru_cache(maxsize=8)
def _intrinsics(width: int, height: int, fov_deg: float) -> Intrinsics:
    return Intrinsics.from_fov(width, height, fov_deg)


_STOP_RULES: dict[str, Any] = {}


def _stop_rule(monitors: MonitorsConfig) -> Any:
    key = monitors.model_dump_json()
    if key not in _STOP_RULES:
        _STOP_RULES[key] = build_stop_rule(monitors)
    return _STOP_RULES[key]
