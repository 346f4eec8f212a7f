"""Scheme E1 "detect ML errors" (SG/RH/AC paper, eq. 14-15): tau is any false positive or false negative of a
frame's detections against its ground truth; the monitor's alarm is the other label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perception_safety.core.episode import Episode
from perception_safety.core.matching import match_boxes
from perception_safety.core.types import Frame
from perception_safety.evaluation.returns.config import E1Config, ReturnsError
from perception_safety.evaluation.returns.estimates import (
    BinaryCounts,
    Returns,
    SafetyMetrics,
    binary_counts,
    classification_returns,
    mean_metrics,
    safety_metrics,
)


def frame_has_error(frame: Frame, rule: E1Config) -> bool:
    """tau of eq. 14: True when the frame has a false positive or a false negative under ``rule``."""
    dets = [d for d in frame.detections if d.score >= rule.score_threshold]
    gts = list(frame.ground_truth)
    if rule.classes is not None:
        keep = set(rule.classes)
        dets = [d for d in dets if d.class_id in keep]
        gts = [g for g in gts if g.class_id in keep]
    if not dets and not gts:
        return False
    if not dets or not gts:
        return True
    m = match_boxes(
        np.array([d.box.as_tuple() for d in dets], dtype=np.float64),
        np.array([g.box.as_tuple() for g in gts], dtype=np.float64),
        rule.iou_threshold,
        [d.class_id for d in dets],
        [g.class_id for g in gts],
        rule.class_aware,
    )
    return m.det_indices.size < len(dets) or m.gt_indices.size < len(gts)


@dataclass(frozen=True)
class E1Result:
    """Scheme E1 over frames: metrics averaged over all frames and per episode, and the binary counts."""

    frames: SafetyMetrics
    episodes: SafetyMetrics
    counts: BinaryCounts
    per_episode: Mapping[str, SafetyMetrics] = field(default_factory=dict)
    per_episode_returns: Mapping[str, Returns] = field(default_factory=dict)
    """Each episode's per-frame returns (the clusters of the frame-averaged intervals)."""


def e1_episode(episode: Episode, rule: E1Config) -> tuple[np.ndarray, np.ndarray]:
    """tau and alarm per frame of one rollout; every step must carry its frame."""
    tau, alarm = [], []
    for s in episode.steps:
        if s.frame is None:
            raise ReturnsError(
                f"{episode.source}: episode {episode.episode} ({episode.rollout}) t={s.t}: "
                "E1 needs the frame (detections and ground truth) in every step"
            )
        tau.append(frame_has_error(s.frame, rule))
        alarm.append(s.alarm)
    return np.array(tau, dtype=bool), np.array(alarm, dtype=bool)


def e1_metrics(episodes: Sequence[Episode], rule: E1Config) -> E1Result:
    """E1 (eq. 14-15) over the given rollouts: frame-averaged, per-episode-averaged, and counts."""
    parts, per, taus, alarms, returns = [], {}, [], [], {}
    for ep in episodes:
        if not ep.steps:
            continue
        tau, alarm = e1_episode(ep, rule)
        r = classification_returns(tau, alarm)
        parts.append(r)
        returns[ep.episode] = r
        per[ep.episode] = safety_metrics(r)
        taus.append(tau)
        alarms.append(alarm)
    if not parts:
        raise ReturnsError("returns: E1 found no frames in the selected rollouts")
    counts = binary_counts(np.concatenate(taus), np.concatenate(alarms))
    frames = safety_metrics(Returns.concatenate(parts))
    return E1Result(frames, mean_metrics(list(per.values())), counts, per, returns)
