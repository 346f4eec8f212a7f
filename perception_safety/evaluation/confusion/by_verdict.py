"""Confusion counts split by the runtime monitor's verdict: the joint counts ``n(o, alarm)`` (issue 14).

Frames whose verdict is known go to one of two `ConfusionAccumulator`s (no alarm / alarm), so every count of
Algorithms 1-2 exists once per verdict; their sum is the ordinary matrix of those frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, sum_confusions
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.types import DistanceConfusion


@dataclass(frozen=True)
class VerdictSplit:
    """Counts of the frames without (``no_alarm``) and with (``alarm``) a monitor alarm, and how many frames
    had a verdict at all (``frames_with_verdict``) or none (``frames_without_verdict``: not counted)."""

    no_alarm: DistanceConfusion
    alarm: DistanceConfusion
    frames_with_verdict: int
    frames_without_verdict: int = 0

    @property
    def marginal(self) -> DistanceConfusion:
        """The verdict summed out: the ordinary matrices of the frames that have a verdict."""
        return sum_confusions([self.no_alarm, self.alarm], source=self.no_alarm.source)


def split_by_verdict(
    frames: Sequence[Frame], alarms: Sequence[bool | None], config: ConfusionConfig, source: str = ""
) -> VerdictSplit:
    """Accumulate ``frames`` by verdict (``None``: no verdict recorded, left out and counted)."""
    if len(frames) != len(alarms):
        raise ValueError(f"{source or 'frames'}: {len(frames)} frames but {len(alarms)} verdicts")
    parts = {False: ConfusionAccumulator(config), True: ConfusionAccumulator(config)}
    for verdict in (False, True):
        parts[verdict].add_frames(f for f, a in zip(frames, alarms, strict=True) if a is verdict)
    known = sum(a is not None for a in alarms)
    return VerdictSplit(parts[False].result(source), parts[True].result(source), known, len(alarms) - known)


def sum_splits(parts: Sequence[VerdictSplit], source: str = "") -> VerdictSplit:
    """The reduce over bags."""
    return VerdictSplit(
        sum_confusions([p.no_alarm for p in parts], source),
        sum_confusions([p.alarm for p in parts], source),
        sum(p.frames_with_verdict for p in parts),
        sum(p.frames_without_verdict for p in parts),
    )
