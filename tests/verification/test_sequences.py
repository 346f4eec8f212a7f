"""Per-frame observation sequences (issue 24 item 9): their counts are the confusion matrices' columns (counted
independently by the accumulator), run-length coding round-trips, ambiguous frames break runs."""

from __future__ import annotations

import numpy as np

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.sequences import decode, encode, observation_sequences
from tests.pipeline.conftest import scene_frames

CFG = ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}, bin_edges=[0, 30, 60, 100])


def test_run_length_coding_round_trips() -> None:
    bins = np.array([1, 1, 1, -1, 0, 0, 2])
    labels = np.array([0, 0, 2, 5, 2, 2, 1])
    runs = encode(bins, labels)
    assert runs == [[1, 0, 2], [1, 2, 1], [-1, 0, 1], [0, 2, 2], [2, 1, 1]]
    b, y = decode(runs)
    np.testing.assert_array_equal(b, bins)
    np.testing.assert_array_equal(y, np.where(bins >= 0, labels, 0))
    assert encode(np.zeros(0), np.zeros(0)) == [] and decode([])[0].size == 0


def test_sequence_counts_are_the_matrix_columns() -> None:
    frames = scene_frames(200, 7)
    dc = confusion_from_frames(frames, CFG)
    seqs = observation_sequences(FrameBatch.from_frames(frames, ClassMapper(CFG)), CFG, "ped", ["ped", "ped,obs"])
    assert seqs["ambiguous"]["ped"] == 0  # one pedestrian per frame
    k = len(CFG.bins)
    cls = ObservationRuns.from_sequences([decode(seqs["class"]["ped"])], k, 3).marginal()[0]  # [bin, pred]
    np.testing.assert_array_equal(cls, dc.class_cm[:, :, 0])
    for s in ("ped", "ped,obs"):
        j = dc.prop_labels.index(s)
        prop = ObservationRuns.from_sequences([decode(seqs["prop"][s])], k, 4).marginal()[0]
        np.testing.assert_array_equal(prop, dc.prop_cm[:, :, j])
        pooled = ObservationRuns.from_sequences([decode(seqs["prop_pooled"][s])], 1, 4).marginal()[0, 0]
        np.testing.assert_array_equal(pooled, dc.prop_cm_pooled[:, j])


def test_frames_with_two_pedestrians_break_the_run() -> None:
    def ped(d: float, x: float) -> GroundTruthObject:
        return GroundTruthObject.at_position(Box(x, 100, x + 40, 200), "pedestrian", (d, 0.0, 0.0), "p")

    one, two = (ped(10, 100),), (ped(10, 100), ped(12, 300))
    det = (Detection(Box(100, 100, 140, 200), "pedestrian", 0.9),)
    frames = [Frame(i, det if i != 3 else (), gts, EgoState()) for i, gts in enumerate([one, one, two, one, one])]
    seqs = observation_sequences(FrameBatch.from_frames(frames, ClassMapper(CFG)), CFG, "ped", [])
    b, y = decode(seqs["class"]["ped"])
    np.testing.assert_array_equal(b, [0, 0, -1, 0, 0])
    np.testing.assert_array_equal(y, [0, 0, 0, 2, 0])  # frame 3 missed: predicted 'empty'
    assert seqs["ambiguous"]["ped"] == 1
