"""One pass over the recorded perception rollouts that judges every frame at every operating point.

Each bag is read once (`pipeline.bag_pass.read_episodes`, images decoded) and every frame goes through one
`MonitorSuite` per operating point (the node's own objects, reset per episode, regions checked against the
camera in use). What is kept per episode: E1's error label tau per frame (the SG/RH/AC paper's eq. 14), each
point's alarm of the runtime monitor m_f per frame, and the frames without their images (for the confusion counts
split by verdict that the monitored Markov chain needs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.returns import E1Config, frame_has_error
from perception_safety.io.bag import BagReadReport, BagTopics
from perception_safety.monitors.regions.resolve import RegionError, camera_in_use
from perception_safety.monitors.suite import MonitorSuite, RegionCheck
from perception_safety.pipeline.bag_pass import MapInput, ReadOptions, read_episodes
from perception_safety.pipeline.tuning.grid import OperatingPoint


@dataclass
class EpisodeJudgements:
    """One episode: its frames (no images), tau per frame and, per operating point, m_f's alarm per frame."""

    episode: str
    source: str
    frames: list[Frame] = field(default_factory=list)
    tau: list[bool] = field(default_factory=list)
    alarms: list[list[bool]] = field(default_factory=list)
    images: int = 0

    def alarm_array(self, point: int) -> np.ndarray:
        return np.asarray(self.alarms[point], dtype=bool)


def judge_episode(frames: Sequence[Frame], points: Sequence[OperatingPoint], rule: E1Config, episode: str,
                  source: str) -> EpisodeJudgements:
    """Every frame of one episode at every operating point (fresh monitors per episode, as the node per bag)."""
    suites = [MonitorSuite(p.monitors) for p in points]
    checks = [RegionCheck(s) for s in suites]
    out = EpisodeJudgements(episode, source, alarms=[[] for _ in points])
    for frame in frames:
        for k, (suite, check) in enumerate(zip(suites, checks, strict=True)):
            if check.update(camera_in_use(frame, suite.config.camera)) and check.problems:
                raise RegionError(f"{source}: operating point {points[k].label}: " + "; ".join(check.problems))
            results, _ = suite.evaluate(frame)
            combined = next(r for r in results if r.name == suite.runtime.name)
            out.alarms[k].append(bool(combined.alarm))
        out.tau.append(frame_has_error(frame, rule))
        out.images += frame.image is not None
        out.frames.append(replace(frame, image=None))
    return out


def sweep_inputs(inputs: Sequence[MapInput], topics: BagTopics, tolerance_ns: int, points: Sequence[OperatingPoint],
                 rule: E1Config, progress: Callable[[str], None] | None = None
                 ) -> tuple[list[EpisodeJudgements], BagReadReport]:
    """The judgements of every episode of every input, in input order, and what reading left out."""
    report = BagReadReport()
    opts = ReadOptions(topics=topics, tolerance_ns=tolerance_ns, with_images=True)
    episodes = []
    for inp in inputs:
        for ep in read_episodes(inp, opts, report):
            episodes.append(judge_episode(ep.frames, points, rule, ep.episode, ep.source))
        if progress:
            progress(inp.path)
    return episodes, report
