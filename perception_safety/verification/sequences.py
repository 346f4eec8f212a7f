"""Per-frame observation sequences of one true column, from the confusion machinery's matching (issue 24 item 9).

The independence test of consecutive observations (`memory.ObservationRuns`) needs, for every frame in time
order, the distance bin of the true column's sample and what was observed there. Per episode and per column:

- class-labeled (Algorithm 2): the column of one class (the pedestrian); a frame with exactly one in-range
  object of that class gives ``(bin, predicted class)`` (``empty`` when missed); a frame with none, or with more
  than one (which of them follows which is unknown), breaks the run (bin -1, counted as ``ambiguous``);
- proposition-labeled (Algorithm 1): the column of one true set; a frame with exactly one (frame, bin) cell whose
  true set is that set gives ``(bin, predicted set)``; pooled: the frame's own sets (bin 0).

Sequences travel as run-length triples ``[bin, label, length]`` (small, JSON-able); `decode` restores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.accumulate import match_batch
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.types import proposition_labels, subset_lookup


def encode(bins: np.ndarray, labels: np.ndarray) -> list[list[int]]:
    """Run-length triples ``[bin, label, length]`` of two equal-length integer arrays (a break keeps label 0)."""
    b = np.asarray(bins, dtype=np.int64)
    y = np.where(b >= 0, np.asarray(labels, dtype=np.int64), 0)
    if b.size == 0:
        return []
    change = np.flatnonzero((b[1:] != b[:-1]) | (y[1:] != y[:-1])) + 1
    starts = np.concatenate([[0], change])
    lengths = np.diff(np.concatenate([starts, [b.size]]))
    return [[int(b[s]), int(y[s]), int(n)] for s, n in zip(starts, lengths, strict=True)]


def decode(runs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(bins, labels)`` of run-length triples (`encode`)."""
    if not runs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    a = np.asarray(runs, dtype=np.int64).reshape(-1, 3)
    if (a[:, 2] < 0).any():
        raise ValueError("run lengths must be non-negative")
    return np.repeat(a[:, 0], a[:, 2]), np.repeat(a[:, 1], a[:, 2])


def _single(cell_frame: np.ndarray, keep: np.ndarray, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: the index of its one kept item (-1: none or several) and how many frames had several."""
    count = np.bincount(cell_frame[keep], minlength=n_frames)
    first = np.full(n_frames, -1, dtype=np.int64)
    idx = np.flatnonzero(keep)
    first[cell_frame[idx]] = idx  # read only where the frame has exactly one
    return np.where(count == 1, first, -1), count > 1


def observation_sequences(batch: FrameBatch, cfg: ConfusionConfig, class_name: str,
                          prop_sets: Sequence[str], pred: np.ndarray | None = None) -> dict[str, Any]:
    """The class column ``class_name`` and the proposition columns ``prop_sets`` (labels of `proposition_labels`)
    of one batch's frames in order: ``{"class": {name: runs}, "prop": {set: runs}, "prop_pooled": {set: runs},
    "ambiguous": {...frames with several samples of the column}}`` (module docstring). ``pred``: each object's
    predicted class (``n_classes`` = missed) when the caller matched the batch already (`MatchedRows.gt_pred`)."""
    n_cls, n_bins, n_f = len(cfg.classes), len(cfg.bins), batch.n_frames
    if pred is None:
        gt_match, _ = match_batch(batch, cfg.iou_threshold, cfg.class_aware, cfg.matching, cfg.centre_distance_m)
        matched = gt_match >= 0
        pred = np.full(len(gt_match), n_cls, dtype=np.int64)
        pred[matched] = batch.det_classes[gt_match[matched]]
    edges = np.asarray(cfg.bin_edges, dtype=np.float64)
    b = np.searchsorted(edges, batch.gt_distances, side="right") - 1
    valid = (b >= 0) & (b < n_bins)
    gt_frame = np.repeat(np.arange(n_f, dtype=np.int64), np.diff(batch.gt_offsets))
    out: dict[str, Any] = {"class": {}, "prop": {}, "prop_pooled": {}, "ambiguous": {}}
    names = list(cfg.class_names)
    if class_name in names:
        c = names.index(class_name)
        one, several = _single(gt_frame, valid & (batch.gt_classes == c), n_f)
        safe = np.maximum(one, 0)
        out["class"][class_name] = encode(np.where(one >= 0, b[safe], -1), pred[safe])
        out["ambiguous"][class_name] = int(several.sum())
    if not prop_sets:
        return out
    lut = subset_lookup(n_cls)
    cell = gt_frame * n_bins + np.where(valid, b, 0)
    true_mask = np.zeros(n_f * n_bins, dtype=np.int64)
    pred_mask = np.zeros(n_f * n_bins, dtype=np.int64)
    for k in range(n_cls):
        true_mask |= (np.bincount(cell[valid & (batch.gt_classes == k)], minlength=n_f * n_bins) > 0) << k
        pred_mask |= (np.bincount(cell[valid & (pred == k)], minlength=n_f * n_bins) > 0) << k
    true_idx, pred_idx = lut[true_mask], lut[pred_mask]
    frame_true = np.bitwise_or.reduce(true_mask.reshape(n_f, n_bins), axis=1) if n_f else true_mask[:0]
    frame_pred = np.bitwise_or.reduce(pred_mask.reshape(n_f, n_bins), axis=1) if n_f else pred_mask[:0]
    labels = proposition_labels(names, cfg.empty_label)
    cell_frame = np.repeat(np.arange(n_f, dtype=np.int64), n_bins)
    for s in (s for s in prop_sets if s in labels):  # an unknown set is the sweep's configuration error
        j = labels.index(s)
        one, several = _single(cell_frame, true_idx == j, n_f)
        safe = np.maximum(one, 0)
        out["prop"][s] = encode(np.where(one >= 0, safe % n_bins, -1), pred_idx[safe])
        out["ambiguous"][f"prop:{s}"] = int(several.sum())
        hit = lut[frame_true] == j
        out["prop_pooled"][s] = encode(np.where(hit, 0, -1), lut[frame_pred])
    return out

