"""Scheme E2 "prevent accidents" (SG/RH/AC paper, eq. 16-17) from three aligned rollouts of one scenario:
mission reward 1 running / 0 stopped, safety reward -1 on collision frames, returns summed over the future."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from perception_safety.core.episode import Episode
from perception_safety.evaluation.returns.config import E2Config, ReturnsError
from perception_safety.evaluation.returns.estimates import Returns, SafetyMetrics, safety_metrics

# ---------------------------------------------------------------- eq. 16-17 (E2)

Rollout = Literal["perception", "monitored", "ground_truth"]


@dataclass(frozen=True)
class E2Episode:
    """E2 returns of one scenario: per-frame returns (t = 0..T-2) and the per-episode returns from x_0."""

    episode: str
    horizon: int
    frames: Returns
    episode_returns: Returns
    collided: Mapping[str, bool]
    running_frames: Mapping[str, int]


def _padded(ep: Episode, horizon: int, collision_once: bool) -> tuple[np.ndarray, np.ndarray]:
    """running and collision indicators over t = 0..T-1; after the rollout ends the car is stopped."""
    running = np.zeros(horizon, dtype=bool)
    collision = np.zeros(horizon, dtype=bool)
    for s in ep.steps:
        if s.t >= horizon:
            break
        if s.t < 0:
            raise ReturnsError(f"{ep.source}: episode {ep.episode} ({ep.rollout}): negative t={s.t}")
        running[s.t] = s.running
        collision[s.t] = s.collision
    ts = [s.t for s in ep.steps if 0 <= s.t < horizon]
    if ts and ts != list(range(len(ts))):
        missing = sorted(set(range(ts[-1] + 1)) - set(ts))[:5]
        raise ReturnsError(f"{ep.source}: episode {ep.episode} ({ep.rollout}): frames missing at t={missing}")
    if collision_once and collision.any():
        first = int(np.argmax(collision))
        collision[:] = False
        collision[first] = True
    return running, collision


def e2_rollout_returns(running: np.ndarray, collision: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 16-17 for t = 0..T-2: M(x_t) = r_M(z_{t+1}); S(x_t) = sum_{k>t} r_S(z_k) with r_S = -1 on collisions."""
    r_m = running.astype(np.float64)
    r_s = -collision.astype(np.float64)
    future_s = np.cumsum(r_s[::-1])[::-1]  # future_s[k] = sum_{j>=k} r_s[j]
    return r_m[1:], future_s[1:]


HORIZON_META_KEYS = ("horizon", "frames")


def _logged_horizon(rollouts: Iterable[Episode]) -> int:
    """T of a scenario: the largest ``horizon`` (or ``frames``) integer in the rollouts' begin meta,
    else the length of the longest rollout."""
    eps = list(rollouts)
    longest = max(max((s.t for s in ep.steps), default=-1) + 1 for ep in eps)
    declared = []
    for ep in eps:
        for key in HORIZON_META_KEYS:
            v = ep.meta.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                declared.append(v)
                break
    return max([longest, *declared])


def e2_episode(
    perception: Episode, monitored: Episode, ground_truth: Episode, config: E2Config | None = None
) -> E2Episode:
    """E2 returns of one scenario's three aligned rollouts.

    Frame form: eq. 16-17 at every t = 0..T-2 (T = horizon). Episode form: the returns from x_0,
    S = sum_{k=1}^{T-1} r_S(z_k) (-1 when the rollout collides) and M = mean_{k=1}^{T-1} r_M(z_k)
    (the fraction of frames running), so that AC is the mean loss of running time (paper Table II).
    """
    config = config or E2Config()
    rollouts = {"perception": perception, "monitored": monitored, "ground_truth": ground_truth}
    horizon = config.horizon or _logged_horizon(rollouts.values())
    if horizon < 2:
        raise ReturnsError(f"episode {perception.episode}: E2 needs at least 2 frames, got horizon {horizon}")
    frame_cols, ep_cols, collided, running_frames = {}, {}, {}, {}
    for name, ep in rollouts.items():
        running, collision = _padded(ep, horizon, config.collision_once)
        m, s = e2_rollout_returns(running, collision)
        frame_cols[name] = (s, m)
        ep_cols[name] = (np.array([s[0]]), np.array([float(np.mean(running[1:]))]))
        collided[name] = bool(collision[1:].any())
        running_frames[name] = int(running[1:].sum())

    def build(cols: dict[str, tuple[np.ndarray, np.ndarray]]) -> Returns:
        return Returns(
            safety_f=cols["perception"][0],
            safety_fm=cols["monitored"][0],
            safety_gt=cols["ground_truth"][0],
            mission_f=cols["perception"][1],
            mission_fm=cols["monitored"][1],
            mission_gt=cols["ground_truth"][1],
        )

    return E2Episode(perception.episode, horizon, build(frame_cols), build(ep_cols), collided, running_frames)


@dataclass(frozen=True)
class E2Result:
    """Scheme E2: metrics over all frames (eq. 7-9 with eq. 16-17) and over episodes (returns from x_0)."""

    frames: SafetyMetrics
    episodes: SafetyMetrics
    per_episode: tuple[E2Episode, ...]


def e2_metrics(triples: Sequence[tuple[Episode, Episode, Episode]], config: E2Config | None = None) -> E2Result:
    """E2 over scenarios given as ``(perception, monitored, ground_truth)`` rollouts."""
    per = tuple(e2_episode(p, m, g, config) for p, m, g in triples)
    if not per:
        raise ReturnsError("returns: E2 needs at least one scenario with all three rollouts")
    frames = safety_metrics(Returns.concatenate([e.frames for e in per]))
    episodes = safety_metrics(Returns.concatenate([e.episode_returns for e in per]))
    return E2Result(frames, episodes, per)
