"""Distance-binned class- and proposition-labeled confusion matrices (seed paper, Section III).

Class-labeled (Algorithm 2, eq. 7): one count per ground-truth object in a bin, ``cm[pred, true]``;
a missed object counts as predicted ``empty`` (Remark 1); a (frame, bin) without ground truth adds
one ``(empty, empty)``; detections matched to no annotated object are ignored (and counted).
Proposition-labeled (Algorithm 1, eq. 4): one count per (frame, bin), the set of classes predicted
for the bin's objects against the set of their true classes.

Frames are processed in columnar batches: IoU of every (detection, ground truth) pair of a frame is
computed for the whole batch at once; a frame whose admissible pairs are disjoint (each detection and
each object in at most one admissible pair) has that set as its unique optimal matching; other small
connected components are solved exactly by enumeration (see `match_batch`); only the remaining frames
go to the per-frame Hungarian `perception_safety.core.match_boxes`. The result equals per-frame `match_boxes`
(exactly, wherever the optimal matching is unique; IoU ties always go to `match_boxes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.clusters import ClusterCounts, batch_counts, merge_all
from perception_safety.evaluation.confusion.combine import UNMATCHED_BY_BIN, sum_confusions
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.matching import match_batch
from perception_safety.evaluation.confusion.rows import MatchedRows
from perception_safety.evaluation.confusion.types import DistanceConfusion, proposition_labels, subset_lookup
from perception_safety.evaluation.confusion.windows import WindowVotes

_COUNTERS = (
    "frames",
    "ground_truth_binned",
    "ground_truth_below_range",
    "ground_truth_beyond_range",
    "detections",
    "detections_matched",
    "detections_matched_out_of_range",
    "detections_unannotated",
    "detections_unannotated_without_distance",
    "hungarian_fallback_frames",
    "frames_without_episode",
)


@dataclass
class ConfusionAccumulator:
    """Running sums of both matrix types over batches; mergeable (map per bag, reduce by `merge`).

    Class-labeled counts are also kept per episode (`ClusterCounts`): a frame's own ``Frame.episode``, else
    ``episode`` (the bag being read); frames with neither are counted as ``frames_without_episode``.
    """

    config: ConfusionConfig
    episode: str = ""
    class_cm: np.ndarray = field(init=False)
    prop_cm: np.ndarray = field(init=False)
    class_cm_pooled: np.ndarray = field(init=False)
    prop_cm_pooled: np.ndarray = field(init=False)
    counters: dict[str, int] = field(init=False)
    unmapped_detections: Counter[str] = field(init=False)
    unmapped_ground_truth: Counter[str] = field(init=False)

    def __post_init__(self) -> None:
        c1 = len(self.config.classes) + 1
        p = 1 << len(self.config.classes)
        k = len(self.config.bins)
        self.class_cm = np.zeros((k, c1, c1), dtype=np.int64)
        self.prop_cm = np.zeros((k, p, p), dtype=np.int64)
        self.class_cm_pooled = np.zeros((c1, c1), dtype=np.int64)
        self.prop_cm_pooled = np.zeros((p, p), dtype=np.int64)
        self.counters = dict.fromkeys(_COUNTERS, 0)
        self.unmapped_detections = Counter()
        self.unmapped_ground_truth = Counter()
        self.unannotated_by_class = np.zeros(len(self.config.classes), dtype=np.int64)
        self.unannotated_by_bin = np.zeros((k + 1, len(self.config.classes)), dtype=np.int64)
        self._clusters = ClusterCounts.empty(k, c1)
        self._cluster_parts: list[ClusterCounts] = []  # merged when read (`clusters`): one pass, not one per batch
        self._edges = np.asarray(self.config.bin_edges, dtype=np.float64)
        self._lut = subset_lookup(len(self.config.classes))
        self._mapper = ClassMapper(self.config)
        self._votes = (
            WindowVotes(round(self.config.track_window_s * 1e9), c1, p)
            if self.config.sample_unit == "track_window"
            else None
        )

    @property
    def clusters(self) -> ClusterCounts:
        """The per-episode counts of everything added (parts of many batches merged in one pass when read)."""
        if self._cluster_parts:
            self._clusters = merge_all([self._clusters, *self._cluster_parts])  # type: ignore[assignment]
            self._cluster_parts.clear()
        return self._clusters

    def add_frames(self, frames: Iterable[Frame]) -> ConfusionAccumulator:
        """Add frames (consumed in chunks of ``config.chunk_frames``)."""
        for chunk in _chunks(frames, self.config.chunk_frames):
            self.add_batch(FrameBatch.from_frames(chunk, self._mapper))
        return self

    def add_batch(self, batch: FrameBatch) -> ConfusionAccumulator:
        """Match, bin and count one columnar batch (Algorithms 1 and 2)."""
        return self.add_rows(MatchedRows.of(batch, self.config))

    def add_rows(self, rows: MatchedRows) -> ConfusionAccumulator:
        """Count a matched batch or a selection of its rows (`rows.MatchedRows`, matched with this config)."""
        cfg = self.config
        if rows.config is not cfg and rows.config != cfg:
            raise ValueError("these rows were matched with another confusion config than the accumulator's")
        n_cls = len(cfg.classes)
        c1 = n_cls + 1
        n_bins = len(self._edges) - 1
        n_f = rows.n_frames
        p = len(self._lut)
        gt_frame, pred, true, b = rows.gt_frame, rows.gt_pred, rows.gt_true, rows.gt_bin
        dist = rows.gt_dist
        valid = b >= 0
        valid &= b < n_bins
        kept = np.flatnonzero(valid)  # a gather by index is several times faster than a boolean mask here

        # Class-labeled, per bin; pooled = the same objects summed over the bins (one bin spanning all edges).
        bv, pv, tv, fv = b.take(kept), pred.take(kept), true.take(kept), gt_frame.take(kept)
        label = pv * c1
        label += tv
        per_bin = np.bincount(bv * (c1 * c1) + label, minlength=n_bins * c1 * c1).reshape(n_bins, c1, c1)
        pooled = per_bin.sum(axis=0)
        cell = fv * n_bins
        cell += bv
        n_cells = n_f * n_bins

        # Proposition-labeled: class sets per (frame, bin) as bitmasks, then subset indices.
        true_mask = _class_sets(cell, tv, n_cells, n_cls)
        pred_mask = _class_sets(cell, pv, n_cells, n_cls)
        empty_cells = (true_mask == 0).reshape(n_f, n_bins)  # no binned object in the cell
        per_bin[:, n_cls, n_cls] += empty_cells.sum(axis=0)
        pooled[n_cls, n_cls] += int(empty_cells.all(axis=1).sum())
        self.class_cm += per_bin
        self.class_cm_pooled += pooled
        cell_bin = np.arange(n_cells, dtype=np.int64)
        cell_bin %= n_bins
        key = (cell_bin * p + self._lut[pred_mask]) * p + self._lut[true_mask]
        self.prop_cm += np.bincount(key, minlength=n_bins * p * p).reshape(n_bins, p, p)
        frame_true = np.bitwise_or.reduce(true_mask.reshape(n_f, n_bins), axis=1) if n_f else true_mask[:0]
        frame_pred = np.bitwise_or.reduce(pred_mask.reshape(n_f, n_bins), axis=1) if n_f else pred_mask[:0]
        self.prop_cm_pooled += np.bincount(self._lut[frame_pred] * p + self._lut[frame_true], minlength=p * p).reshape(
            p, p
        )
        if self._votes is not None:  # sample_unit track_window (`windows`): votes instead of counts
            if rows.frame_stamps is None or rows.gt_tracks is None:
                raise ValueError(
                    "sample_unit track_window needs frame stamps and ground-truth track ids; this input (e.g. a CSV "
                    "dataset) has none: use sample_unit frame"
                )
            win = rows.frame_stamps // self._votes.window_ns
            self._votes.add_objects(rows.gt_tracks[kept], win[fv], bv, tv, pv)
            self._votes.add_cells(np.repeat(win, n_bins), cell_bin, self._lut[pred_mask], self._lut[true_mask])
            self._votes.add_cells(win, np.full(n_f, -1), self._lut[frame_pred], self._lut[frame_true])

        # Report counters.
        det_matched, det_out = rows.det_matched, rows.det_out
        un = np.flatnonzero(~det_matched)
        un_frame = rows.det_frame[un]
        un_bin = np.full(len(un), n_bins, dtype=np.int64) if rows.det_bin is None else rows.det_bin.take(un)
        un_cls = rows.det_cls[un]
        unmatched = np.bincount(un_bin * n_cls + un_cls, minlength=(n_bins + 1) * n_cls).reshape(n_bins + 1, n_cls)
        self.unannotated_by_bin += unmatched
        episodes = rows.frame_episodes if rows.frame_episodes is not None else np.full(n_f, "", dtype=object)
        episodes = np.where(episodes == "", self.episode, episodes)
        unknown = int((episodes == "").sum())
        if n_f and not unknown and (episodes == episodes[0]).all():  # one episode (a bag): its counts are the batch's
            part = ClusterCounts.built((str(episodes[0]),), per_bin[None], pooled[None], unmatched[None],
                                       np.array([n_f], dtype=np.int64))  # fmt: skip
        else:
            part = batch_counts(episodes, c1, (gt_frame, b, pred, true), empty_cells, (un_frame, un_cls, un_bin))
        self._cluster_parts.append(part)
        c = self.counters
        c["frames_without_episode"] += unknown
        c["detections_unannotated_without_distance"] += int((un_bin == n_bins).sum())
        c["frames"] += n_f
        c["ground_truth_binned"] += len(kept)
        c["ground_truth_below_range"] += int((dist < self._edges[0]).sum())
        c["ground_truth_beyond_range"] += int((dist >= self._edges[-1]).sum())
        c["detections"] += len(det_matched)
        c["detections_matched"] += int(det_matched.sum())
        c["detections_matched_out_of_range"] += int(det_out.sum())
        c["detections_unannotated"] += len(un)
        c["hungarian_fallback_frames"] += len(rows.hard_frame)
        self.unannotated_by_class += np.bincount(un_cls, minlength=n_cls)[:n_cls]
        self.unmapped_detections.update(rows.unmapped_detections)
        self.unmapped_ground_truth.update(rows.unmapped_ground_truth)
        return self

    def merge(self, other: ConfusionAccumulator) -> ConfusionAccumulator:
        """Add another accumulator's counts (same config) into this one (the reduce step)."""
        if other.config != self.config:
            raise ValueError("cannot merge confusion accumulators with different configs")
        self.class_cm += other.class_cm
        self.prop_cm += other.prop_cm
        self.class_cm_pooled += other.class_cm_pooled
        self.prop_cm_pooled += other.prop_cm_pooled
        for key, value in other.counters.items():
            self.counters[key] += value
        self.unmapped_detections.update(other.unmapped_detections)
        self.unmapped_ground_truth.update(other.unmapped_ground_truth)
        self.unannotated_by_class += other.unannotated_by_class
        self.unannotated_by_bin += other.unannotated_by_bin
        self._cluster_parts.append(other.clusters)
        if self._votes is not None and other._votes is not None:
            self._votes.merge(other._votes)
        return self

    def report(self) -> dict[str, Any]:
        """Counters of what was counted, dropped and ignored."""
        out: dict[str, Any] = dict(self.counters)
        out["ground_truth_unmapped"] = dict(sorted(self.unmapped_ground_truth.items()))
        out["detections_unmapped"] = dict(sorted(self.unmapped_detections.items()))
        # Detections of each class that match no ground truth (false positives; they have no distance, so pooled).
        out["detections_unannotated_by_class"] = {
            name: int(n) for name, n in zip(self.config.class_names, self.unannotated_by_class, strict=True)
        }
        if self.config.ground_camera is not None:  # per bin only where a distance could be estimated
            out[UNMATCHED_BY_BIN] = {
                name: self.unannotated_by_bin[:-1, i].tolist() for i, name in enumerate(self.config.class_names)
            }
        if self._votes is not None:
            out["track_window_samples"] = self._votes.samples
            out["ground_truth_untracked"] = self._votes.untracked
        return out

    def result(self, source: str = "") -> DistanceConfusion:
        """The matrices as an immutable `DistanceConfusion` (pooled = one bin spanning all edges)."""
        classes = self.config.class_names
        cms = (self.class_cm, self.class_cm_pooled, self.prop_cm, self.prop_cm_pooled)
        if self._votes is not None:
            cms = self._votes.matrices(len(self.config.bins))
        return DistanceConfusion(
            bin_edges=self.config.bins,
            class_labels=(*classes, self.config.empty_label),
            prop_labels=tuple(proposition_labels(classes, self.config.empty_label)),
            class_cm=cms[0],
            prop_cm=cms[2],
            class_cm_pooled=cms[1],
            prop_cm_pooled=cms[3],
            pooled_method="single_bin",
            source=source,
            report=self.report(),
            clusters=self.cluster_result(),
        )

    def cluster_result(self) -> ClusterCounts | None:
        """Per-episode counts when every frame has an episode and the unit is the frame (else None)."""
        if self._votes is not None or self.counters["frames_without_episode"] or not len(self.clusters):
            return None
        return self.clusters


def _class_sets(cell: np.ndarray, label: np.ndarray, n_cells: int, n_cls: int) -> np.ndarray:
    """Per cell, the bitmask of the classes ``< n_cls`` among its objects' labels (bit c = class c present)."""
    c1 = n_cls + 1
    key = cell * c1
    key += label
    present = np.bincount(key, minlength=n_cells * c1).reshape(n_cells, c1)[:, :n_cls] > 0
    mask = present[:, 0].astype(np.int64)
    for c in range(1, n_cls):
        mask |= present[:, c].astype(np.int64) << c
    return mask


def _chunks(frames: Iterable[Frame], size: int) -> Iterator[list[Frame]]:
    it = iter(frames)
    while chunk := list(islice(it, size)):
        yield chunk


def confusion_from_frames(frames: Iterable[Frame], config: ConfusionConfig | None = None) -> DistanceConfusion:
    """Distance-binned class- and proposition-labeled confusion matrices of ``frames`` (Algorithms 1-2)."""
    acc = ConfusionAccumulator(config or ConfusionConfig())
    return acc.add_frames(frames).result()


__all__ = ["ConfusionAccumulator", "confusion_from_frames", "match_batch", "sum_confusions"]
