"""Per-bin class metrics: the recall-only rows (breakdowns) are the full rows' recall, nothing invented."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.metrics import class_metrics

from .test_accumulate import random_frames

CFG = ConfusionConfig(classes={"a": ["a"], "b": ["b"]}, bin_edges=[0, 10, 20, 30, 40])
RECALL = ("bin", "lo", "hi", "label", "ground_truth", "true_positives", "missed", "confused", "predicted", "recall",
          "false_negative_rate", "miss_rate", "recall_lower", "recall_upper", "clusters", "recall_design_effect",
          "recall_effective_n")
PRECISION = ("precision", "precision_lower", "precision_upper", "precision_matched_only",
             "precision_matched_only_lower", "precision_matched_only_upper", "precision_effective_n")


@pytest.mark.parametrize(("seed", "episodes"), [(0, 6), (1, 12), (2, 0)])
def test_recall_only_rows_are_the_full_rows_recall_with_precision_left_out(seed: int, episodes: int) -> None:
    rng = np.random.default_rng(seed)
    frames = random_frames(rng, 80, 45.0, ("a", "b"))
    if episodes:  # clustered intervals (Korn-Graubard + profile); 0: plain Clopper-Pearson
        frames = [replace(f, episode=f"ep{int(rng.integers(episodes))}") for f in frames]
    dc = confusion_from_frames(frames, CFG)
    assert (dc.clusters is not None) == bool(episodes)
    full, recall_only = class_metrics(dc, 0.05, 5), class_metrics(dc, 0.05, 5, precision=False)
    assert len(full) == len(recall_only) == (len(CFG.bin_edges) - 1 + 1) * 2
    assert any(r.recall_lower is not None and 0 < r.recall_lower < r.recall_upper < 1 for r in full)
    for f, r in zip(full, recall_only, strict=True):
        assert [getattr(r, k) for k in RECALL] == [getattr(f, k) for k in RECALL]
        assert all(getattr(r, k) is None for k in PRECISION)
        assert r.thin == (0 < f.ground_truth < 5)  # judged on recall's samples only
