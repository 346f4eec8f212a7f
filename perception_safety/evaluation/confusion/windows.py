"""``sample_unit: track_window``: at most one confusion-matrix sample per track per time window.

Consecutive frames of one track are not independent samples (the same pedestrian, lit the same way, is
missed in a run of frames), so counting frames overstates ``n`` and narrows every interval. With
``track_window``, time is cut into windows ``[j·w, (j+1)·w)`` of the frame stamps (``w`` =
``track_window_s``) and votes are collected:

- class-labeled, per (track, window, bin, true class): the predicted label of each of its frames; the
  sample is the majority prediction (ties go to the later label in matrix order, so ``empty``, a miss,
  wins a tie: the pessimistic choice). Pooled: per (track, window, true class) over all bins.
- ``(empty, empty)``, per (window, bin): one sample when at least half of the window's frames had no
  object in the bin (pooled: in any bin).
- proposition-labeled, per (window, bin): the most frequent (predicted set, true set) pair of the window's
  frames (ties: the larger predicted index, i.e. ∅ first, then the larger true index). Pooled: per window.

Objects without a track id cannot be grouped: each is its own sample (counted as ``ground_truth_untracked``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

UNTRACKED = "\x00untracked"


@dataclass
class WindowVotes:
    """Votes per (track, window, bin) collected over batches; `matrices` turns them into counts."""

    window_ns: int
    n_labels: int
    n_props: int
    cls: dict[tuple[str, int, int, int], np.ndarray] = field(default_factory=dict)
    prop: dict[tuple[int, int], Counter[tuple[int, int]]] = field(default_factory=dict)
    untracked: int = 0

    def add_objects(
        self, tracks: np.ndarray, windows: np.ndarray, bins: np.ndarray, true: np.ndarray, pred: np.ndarray
    ) -> None:
        """One vote per binned object (``bins == -1`` for the pooled vote is added here too)."""
        if len(tracks) == 0:
            return
        tracks = np.asarray(tracks, dtype=object)
        blank = tracks == ""
        if blank.any():
            ids = np.arange(self.untracked, self.untracked + int(blank.sum()))
            tracks = tracks.copy()
            tracks[blank] = [f"{UNTRACKED}{i}" for i in ids]
            self.untracked += int(blank.sum())
        names, t_idx = np.unique(tracks.astype(str), return_inverse=True)
        for b in (bins, np.full_like(bins, -1)):
            keys = np.stack([t_idx, windows, b, true, pred], axis=1)
            rows, counts = np.unique(keys, axis=0, return_counts=True)
            for (t, w, k, tr, pr), n in zip(rows.tolist(), counts.tolist(), strict=True):
                votes = self.cls.setdefault((str(names[t]), w, k, tr), np.zeros(self.n_labels, dtype=np.int64))
                votes[pr] += n

    def add_cells(self, windows: np.ndarray, bins: np.ndarray, pred: np.ndarray, true: np.ndarray) -> None:
        """One vote per (frame, bin) cell, or per frame with ``bins == -1`` (pooled): its (pred, true) subsets."""
        if len(windows) == 0:
            return
        keys = np.stack([windows, bins, pred, true], axis=1)
        rows, counts = np.unique(keys, axis=0, return_counts=True)
        for (w, k, pr, tr), n in zip(rows.tolist(), counts.tolist(), strict=True):
            self.prop.setdefault((w, k), Counter())[(pr, tr)] += n

    def merge(self, other: WindowVotes) -> None:
        """Add another collection's votes (the same tracks and windows continue across batches)."""
        for key, votes in other.cls.items():
            mine = self.cls.setdefault(key, np.zeros(self.n_labels, dtype=np.int64))
            mine += votes
        for key, counter in other.prop.items():
            self.prop.setdefault(key, Counter()).update(counter)
        self.untracked += other.untracked

    def matrices(self, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(class_cm, class_cm_pooled, prop_cm, prop_cm_pooled)`` with one count per majority vote."""
        c1, p = self.n_labels, self.n_props
        e, empty_set = c1 - 1, p - 1
        class_cm = np.zeros((n_bins, c1, c1), dtype=np.int64)
        class_pooled = np.zeros((c1, c1), dtype=np.int64)
        prop_cm = np.zeros((n_bins, p, p), dtype=np.int64)
        prop_pooled = np.zeros((p, p), dtype=np.int64)
        for (_, _, k, true), votes in self.cls.items():
            pred = c1 - 1 - int(np.argmax(votes[::-1]))  # the last of the tied maxima
            if k < 0:
                class_pooled[pred, true] += 1
            else:
                class_cm[k, pred, true] += 1
        for (_, k), counter in self.prop.items():
            top = max(counter.values())
            pred, true = max(pair for pair, n in counter.items() if n == top)
            empty_frames = sum(n for (_, tr), n in counter.items() if tr == empty_set)
            mostly_empty = 2 * empty_frames >= sum(counter.values())
            if k < 0:
                prop_pooled[pred, true] += 1
                class_pooled[e, e] += mostly_empty
            else:
                prop_cm[k, pred, true] += 1
                class_cm[k, e, e] += mostly_empty
        return class_cm, class_pooled, prop_cm, prop_pooled

    @property
    def samples(self) -> int:
        """Number of class-labeled object samples per bin (the ``n`` the intervals now rest on)."""
        return sum(1 for key in self.cls if key[2] >= 0)


def sample_unit_note(report: dict, window_s: float) -> str:
    """One line for the console/report: how many samples the track windows left of the per-frame objects."""
    n, frames = report.get("track_window_samples", 0), report.get("ground_truth_binned", 0)
    ratio = f", {frames / n:.1f} frame objects per sample" if n else ""
    return (
        f"sample_unit track_window ({window_s:g} s): {n} class-labeled object samples (one majority vote per "
        f"track, window and bin) from {frames} binned objects in frames{ratio}; intervals rest on the samples"
    )


def untracked_warning(report: dict) -> str | None:
    """A warning when objects had no track id (each became its own sample, as with sample_unit frame)."""
    n = report.get("ground_truth_untracked", 0)
    if not n:
        return None
    return (
        f"sample_unit track_window: {n} ground-truth object(s) without a track id were counted one sample per "
        "frame (they cannot be grouped); their intervals are too narrow if consecutive frames are correlated"
    )
