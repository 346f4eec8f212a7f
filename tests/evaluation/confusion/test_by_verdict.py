"""Confusion counts split by the monitor's verdict: each half is the plain matrix of its frames."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.by_verdict import split_by_verdict, sum_splits
from perception_safety.evaluation.confusion.config import ConfusionConfig

CFG = ConfusionConfig(classes={"ped": ["ped"], "obs": ["obs"]}, bin_edges=[0, 10, 20, 30])


def frames() -> list[Frame]:
    out = []
    for i in range(9):
        gts = (GroundTruthObject(Box(0, 0, 10, 10), "ped", 3.0 * i + 1),
               GroundTruthObject(Box(20, 0, 30, 10), "obs", 25.0 - 2 * i))
        dets = (Detection(Box(0, 0, 10, 10), "ped" if i % 3 else "obs", 0.9),) if i % 2 else ()
        out.append(Frame(i, dets, gts))
    return out


def test_halves_are_the_plain_matrices_of_their_frames():
    fr = frames()
    verdicts = [True, False, None, False, True, True, None, False, False]
    split = split_by_verdict(fr, verdicts, CFG, "hand")
    alarm = confusion_from_frames([f for f, a in zip(fr, verdicts, strict=True) if a is True], CFG)
    quiet = confusion_from_frames([f for f, a in zip(fr, verdicts, strict=True) if a is False], CFG)
    for kind in ("class", "prop"):
        assert np.array_equal(split.alarm.counts(kind), alarm.counts(kind))
        assert np.array_equal(split.no_alarm.counts(kind), quiet.counts(kind))
        known = confusion_from_frames([f for f, a in zip(fr, verdicts, strict=True) if a is not None], CFG)
        assert np.array_equal(split.marginal.counts(kind), known.counts(kind))
    assert (split.frames_with_verdict, split.frames_without_verdict) == (7, 2)
    both = sum_splits([split, split])
    assert np.array_equal(both.alarm.class_cm, 2 * alarm.class_cm) and both.frames_without_verdict == 4


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="9 frames but 2 verdicts"):
        split_by_verdict(frames(), [True, False], CFG, "hand")
