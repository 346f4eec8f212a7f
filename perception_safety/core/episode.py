"""Episode values: the frames of one simulated or logged rollout and what the system did on each.

Rollouts of one scenario share an episode id: ``perception`` (f), ``monitored`` (f with the monitor)
and ``ground_truth`` (f*), as in the SG/RH/AC paper (Section II); `io.episode_log` stores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perception_safety.core.types import Frame

ROLLOUTS = ("perception", "monitored", "ground_truth")


@dataclass(frozen=True)
class EpisodeStep:
    """One frame of one rollout: world state at t, the system's stop request and the monitor verdict."""

    t: int
    running: bool
    collision: bool = False
    stop: bool = False
    alarm: bool = False
    frame: Frame | None = None
    reasons: tuple[str, ...] = ()
    values: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Episode:
    """A complete (ended) rollout read back from a log."""

    episode: str
    rollout: str
    steps: tuple[EpisodeStep, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    end_reason: str = ""
    source: str = ""
