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
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from perception_safety.core.iou import iou_pairs
from perception_safety.core.matching import match_boxes, match_centres
from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.centre_pairs import centre_candidate_pairs
from perception_safety.evaluation.confusion.clusters import ClusterCounts, batch_counts
from perception_safety.evaluation.confusion.combine import UNMATCHED_BY_BIN, sum_confusions
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.ground_distance import detection_distances
from perception_safety.evaluation.confusion.types import DistanceConfusion, proposition_labels, subset_lookup
from perception_safety.evaluation.confusion.windows import WindowVotes


def candidate_pairs(batch: FrameBatch, iou_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(detection, ground truth) index pairs of the same frame that can reach ``iou_threshold``.

    A superset of the admissible pairs, found by a sorted window join on ``x_min``: IoU >= t
    forces the x-overlap ``ix >= t * max(w_det, w_gt)``, hence
    ``x_min_gt ∈ [x_min_det - (1 - t) * W, x_max_det - t * w_det]`` with W the widest ground truth.
    """
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    empty = np.zeros(0, dtype=np.int64)
    if n_det == 0 or n_gt == 0:
        return empty, empty
    n_f = batch.n_frames
    det_frame = np.repeat(np.arange(n_f, dtype=np.int64), np.diff(batch.det_offsets))
    gt_frame = np.repeat(np.arange(n_f, dtype=np.int64), np.diff(batch.gt_offsets))
    db, gb = batch.det_boxes, batch.gt_boxes
    w_max = float(np.max(gb[:, 2] - gb[:, 0]))
    lo_x = min(float(db[:, 0].min()), float(gb[:, 0].min()))
    hi_x = max(float(db[:, 2].max()), float(gb[:, 2].max()))
    shift = w_max + 1.0 - lo_x  # every shifted x and window bound lies in (0, stride)
    stride = (hi_x - lo_x) + 2.0 * w_max + 4.0
    key_g = gt_frame * stride + (gb[:, 0] + shift)
    order = np.argsort(key_g, kind="stable")
    sorted_g = key_g[order]
    t = iou_threshold
    base = det_frame * stride + shift
    lo = base + db[:, 0] - (1.0 - t) * w_max
    hi = base + db[:, 2] - t * (db[:, 2] - db[:, 0])
    margin = 1e-9 * (np.abs(hi) + 1.0) + 1e-6
    first = np.searchsorted(sorted_g, lo - margin, side="left")
    last = np.searchsorted(sorted_g, hi + margin, side="right")
    counts = np.maximum(last - first, 0)
    total = int(counts.sum())
    if total == 0:
        return empty, empty
    di = np.repeat(np.arange(n_det, dtype=np.int64), counts)
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    gi = order[pos]
    same = det_frame[di] == gt_frame[gi]  # a safety net: the stride already separates frames
    return di[same], gi[same]


MAX_COMPONENT_EDGES = 6
_MASKS = (np.arange(1 << MAX_COMPONENT_EDGES)[:, None] >> np.arange(MAX_COMPONENT_EDGES)[None, :]) & 1 == 1
_PAIRS = np.array([(i, j) for i in range(MAX_COMPONENT_EDGES) for j in range(i + 1, MAX_COMPONENT_EDGES)])
_PAIR_MASKS = (_MASKS[:, _PAIRS[:, 0]] & _MASKS[:, _PAIRS[:, 1]]).astype(np.float64)
_TIE = 1e-9  # best and runner-up matchings closer than this go to `match_boxes`


def _small_components(
    ed: np.ndarray, eg: np.ndarray, ew: np.ndarray, n_det: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact maximum-weight matchings of the small connected components of an admissible-pair graph.

    Every subset of a component's (at most ``MAX_COMPONENT_EDGES``) pairs is enumerated at once.
    Returns ``(chosen, unresolved)`` edge masks and, per edge, its component label.
    """
    m = len(ed)
    nodes, inv = np.unique(np.concatenate([ed, eg + n_det]), return_inverse=True)
    a, b = inv[:m], inv[m:]
    graph = coo_matrix((np.ones(m), (a, b)), shape=(len(nodes), len(nodes)))
    n_comp, label = connected_components(graph, directed=False)
    comp = label[a]
    size = np.bincount(comp, minlength=n_comp)
    chosen = np.zeros(m, dtype=bool)
    unresolved = size[comp] > MAX_COMPONENT_EDGES
    small = np.flatnonzero(~unresolved)
    if len(small) == 0:
        return chosen, unresolved, comp
    order = small[np.argsort(comp[small], kind="stable")]
    c = comp[order]
    _, row, counts = np.unique(c, return_inverse=True, return_counts=True)
    slot = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    n_rows, e = len(counts), MAX_COMPONENT_EDGES
    edge = np.full((n_rows, e), -1, dtype=np.int64)
    edge[row, slot] = order
    present = edge >= 0
    safe = np.where(present, edge, 0)
    d, g = np.where(present, ed[safe], -1), np.where(present, eg[safe], -2)
    w = np.where(present, ew[safe], 0.0)
    i, j = _PAIRS[:, 0], _PAIRS[:, 1]
    clash = present[:, i] & present[:, j] & ((d[:, i] == d[:, j]) | (g[:, i] == g[:, j]))
    invalid = (clash.astype(np.float64) @ _PAIR_MASKS.T > 0) | ((~present).astype(np.float64) @ _MASKS.T > 0)
    total = np.where(invalid, -1.0, w @ _MASKS.T)
    best = np.argmax(total, axis=1)
    top2 = np.partition(total, -2, axis=1)[:, -2:]
    tie = top2[:, 1] - top2[:, 0] <= _TIE
    pick = _MASKS[best] & present & ~tie[:, None]
    chosen[edge[pick]] = True
    unresolved[edge[present & tie[:, None]]] = True
    return chosen, unresolved, comp


def match_batch(
    batch: FrameBatch,
    iou_threshold: float,
    class_aware: bool,
    matching: str = "iou",
    max_distance: float = 2.0,
) -> tuple[np.ndarray, int]:
    """For every ground-truth object of the batch, the index of its matched detection or -1.

    Same matching as per-frame `match_boxes` (maximum summed IoU over admissible pairs): a pair
    whose detection and object have no other admissible pair is always matched; other connected
    components of the admissible-pair graph with at most ``MAX_COMPONENT_EDGES`` pairs are solved
    exactly by enumeration; frames with a larger component or a near-tie (within 1e-9) go to
    `match_boxes` whole. Also returns how many frames did.
    """
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    gt_match = np.full(n_gt, -1, dtype=np.int64)
    if matching == "centre_distance":  # 3D object lists: weight 1 - d / max_distance (core.matching.match_centres)
        di, gi, iou = centre_candidate_pairs(batch, max_distance)
        adm = iou > 0.0
    else:
        di, gi = candidate_pairs(batch, iou_threshold)
        iou = iou_pairs(batch.det_boxes[di], batch.gt_boxes[gi])
        adm = (iou >= iou_threshold) & (iou > 0.0)
    if len(di) == 0:
        return gt_match, 0
    if class_aware:
        adm &= batch.det_classes[di] == batch.gt_classes[gi]
    ed, eg, ew = di[adm], gi[adm], iou[adm]
    deg_d = np.bincount(ed, minlength=n_det)
    deg_g = np.bincount(eg, minlength=n_gt)
    simple = (deg_d[ed] == 1) & (deg_g[eg] == 1)
    gt_match[eg[simple]] = ed[simple]
    rest = np.flatnonzero(~simple)
    fallback = np.zeros(batch.n_frames, dtype=bool)
    if len(rest):
        chosen, unresolved, _ = _small_components(ed[rest], eg[rest], ew[rest], n_det)
        gt_match[eg[rest[chosen]]] = ed[rest[chosen]]
        edge_frame = np.searchsorted(batch.gt_offsets, eg[rest[unresolved]], side="right") - 1
        fallback[edge_frame] = True
    frames = np.flatnonzero(fallback)
    for f in frames.tolist():
        d0, d1 = int(batch.det_offsets[f]), int(batch.det_offsets[f + 1])
        g0, g1 = int(batch.gt_offsets[f]), int(batch.gt_offsets[f + 1])
        m = (match_centres if matching == "centre_distance" else match_boxes)(
            batch.det_boxes[d0:d1],
            batch.gt_boxes[g0:g1],
            max_distance if matching == "centre_distance" else iou_threshold,
            batch.det_classes[d0:d1].tolist(),
            batch.gt_classes[g0:g1].tolist(),
            class_aware,
        )
        gt_match[g0:g1] = -1
        gt_match[g0 + m.gt_indices] = d0 + m.det_indices
    return gt_match, len(frames)


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
        self.clusters = ClusterCounts.empty(k, c1)
        self._edges = np.asarray(self.config.bin_edges, dtype=np.float64)
        self._lut = subset_lookup(len(self.config.classes))
        self._mapper = ClassMapper(self.config)
        self._votes = (
            WindowVotes(round(self.config.track_window_s * 1e9), c1, p)
            if self.config.sample_unit == "track_window"
            else None
        )

    def add_frames(self, frames: Iterable[Frame]) -> ConfusionAccumulator:
        """Add frames (consumed in chunks of ``config.chunk_frames``)."""
        for chunk in _chunks(frames, self.config.chunk_frames):
            self.add_batch(FrameBatch.from_frames(chunk, self._mapper))
        return self

    def add_batch(self, batch: FrameBatch) -> ConfusionAccumulator:
        """Match, bin and count one columnar batch (Algorithms 1 and 2)."""
        cfg = self.config
        n_cls = len(cfg.classes)
        c1 = n_cls + 1
        n_bins = len(cfg.bins)
        n_f = batch.n_frames
        p = len(self._lut)
        gt_match, fallback = match_batch(
            batch, cfg.iou_threshold, cfg.class_aware, cfg.matching, cfg.centre_distance_m
        )
        matched = gt_match >= 0
        pred = np.full(len(gt_match), n_cls, dtype=np.int64)
        pred[matched] = batch.det_classes[gt_match[matched]]
        true = batch.gt_classes
        dist = batch.gt_distances
        b = np.searchsorted(self._edges, dist, side="right") - 1
        valid = (b >= 0) & (b < n_bins)
        gt_frame = np.repeat(np.arange(n_f, dtype=np.int64), np.diff(batch.gt_offsets))

        # Class-labeled, per bin and pooled (one bin spanning all edges).
        bv, pv, tv, fv = b[valid], pred[valid], true[valid], gt_frame[valid]
        self.class_cm += np.bincount((bv * c1 + pv) * c1 + tv, minlength=n_bins * c1 * c1).reshape(n_bins, c1, c1)
        self.class_cm_pooled += np.bincount(pv * c1 + tv, minlength=c1 * c1).reshape(c1, c1)
        cell = fv * n_bins + bv
        per_cell = np.bincount(cell, minlength=n_f * n_bins).reshape(n_f, n_bins)
        self.class_cm[:, n_cls, n_cls] += (per_cell == 0).sum(axis=0)
        self.class_cm_pooled[n_cls, n_cls] += int((per_cell.sum(axis=1) == 0).sum())

        # Proposition-labeled: class sets per (frame, bin) as bitmasks, then subset indices.
        true_mask = np.zeros(n_f * n_bins, dtype=np.int64)
        pred_mask = np.zeros(n_f * n_bins, dtype=np.int64)
        for c in range(n_cls):
            true_mask |= (np.bincount(cell[tv == c], minlength=n_f * n_bins) > 0).astype(np.int64) << c
            pred_mask |= (np.bincount(cell[pv == c], minlength=n_f * n_bins) > 0).astype(np.int64) << c
        cell_bin = np.tile(np.arange(n_bins, dtype=np.int64), n_f)
        key = (cell_bin * p + self._lut[pred_mask]) * p + self._lut[true_mask]
        self.prop_cm += np.bincount(key, minlength=n_bins * p * p).reshape(n_bins, p, p)
        frame_true = np.bitwise_or.reduce(true_mask.reshape(n_f, n_bins), axis=1) if n_f else true_mask[:0]
        frame_pred = np.bitwise_or.reduce(pred_mask.reshape(n_f, n_bins), axis=1) if n_f else pred_mask[:0]
        self.prop_cm_pooled += np.bincount(self._lut[frame_pred] * p + self._lut[frame_true], minlength=p * p).reshape(
            p, p
        )
        if self._votes is not None:  # sample_unit track_window (`windows`): votes instead of counts
            if batch.frame_stamps is None or batch.gt_tracks is None:
                raise ValueError(
                    "sample_unit track_window needs frame stamps and ground-truth track ids; this input (e.g. a CSV "
                    "dataset) has none: use sample_unit frame"
                )
            win = batch.frame_stamps // self._votes.window_ns
            self._votes.add_objects(batch.gt_tracks[valid], win[gt_frame[valid]], bv, tv, pv)
            self._votes.add_cells(np.repeat(win, n_bins), cell_bin, self._lut[pred_mask], self._lut[true_mask])
            self._votes.add_cells(win, np.full(n_f, -1), self._lut[frame_pred], self._lut[frame_true])

        # Report counters.
        det_matched = np.zeros(len(batch.det_boxes), dtype=bool)
        det_matched[gt_match[matched]] = True
        det_out = np.zeros(len(batch.det_boxes), dtype=bool)
        det_out[gt_match[matched & ~valid]] = True
        un = np.flatnonzero(~det_matched)
        un_frame = det_frame_of(batch)[un]
        un_bin = np.full(len(un), n_bins, dtype=np.int64)
        carried = batch.det_distances[un] if batch.det_distances is not None else np.full(len(un), np.nan)
        if len(un) and (cfg.ground_camera is not None or np.isfinite(carried).any()):
            d = detection_distances(carried, batch.det_boxes[un, 3], cfg.ground_camera)
            kb = np.searchsorted(self._edges, np.nan_to_num(d, nan=-1.0), side="right") - 1
            un_bin = np.where(np.isfinite(d) & (kb >= 0) & (kb < n_bins), kb, n_bins)
        un_cls = batch.det_classes[un]
        np.add.at(self.unannotated_by_bin, (un_bin, un_cls), 1)
        episodes = batch.frame_episodes if batch.frame_episodes is not None else np.full(n_f, "", dtype=object)
        episodes = np.where(episodes == "", self.episode, episodes)
        part = batch_counts(episodes, c1, (gt_frame, b, pred, true), per_cell, (un_frame, un_cls, un_bin))
        self.clusters = self.clusters.merge(part)
        c = self.counters
        c["frames_without_episode"] += int((episodes == "").sum())
        c["detections_unannotated_without_distance"] += int((un_bin == n_bins).sum())
        c["frames"] += n_f
        c["ground_truth_binned"] += int(valid.sum())
        c["ground_truth_below_range"] += int((dist < self._edges[0]).sum())
        c["ground_truth_beyond_range"] += int((dist >= self._edges[-1]).sum())
        c["detections"] += len(batch.det_boxes)
        c["detections_matched"] += int(det_matched.sum())
        c["detections_matched_out_of_range"] += int(det_out.sum())
        c["detections_unannotated"] += int((~det_matched).sum())
        c["hungarian_fallback_frames"] += fallback
        self.unannotated_by_class += np.bincount(batch.det_classes[~det_matched], minlength=n_cls)[:n_cls]
        self.unmapped_detections.update(batch.unmapped_detections)
        self.unmapped_ground_truth.update(batch.unmapped_ground_truth)
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
        self.clusters = self.clusters.merge(other.clusters)
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
            clusters=self._cluster_result(),
        )

    def _cluster_result(self) -> ClusterCounts | None:
        """Per-episode counts when every frame has an episode and the unit is the frame (else None)."""
        if self._votes is not None or self.counters["frames_without_episode"] or not len(self.clusters):
            return None
        return self.clusters


def det_frame_of(batch: FrameBatch) -> np.ndarray:
    """Frame index of every detection of the batch."""
    return np.repeat(np.arange(batch.n_frames, dtype=np.int64), np.diff(batch.det_offsets))


def _chunks(frames: Iterable[Frame], size: int) -> Iterator[list[Frame]]:
    it = iter(frames)
    while chunk := list(islice(it, size)):
        yield chunk


def confusion_from_frames(frames: Iterable[Frame], config: ConfusionConfig | None = None) -> DistanceConfusion:
    """Distance-binned class- and proposition-labeled confusion matrices of ``frames`` (Algorithms 1-2)."""
    acc = ConfusionAccumulator(config or ConfusionConfig())
    return acc.add_frames(frames).result()


__all__ = ["ConfusionAccumulator", "confusion_from_frames", "match_batch", "sum_confusions"]
