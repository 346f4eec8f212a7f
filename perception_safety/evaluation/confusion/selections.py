"""Many selections of one matched batch counted at once (Algorithms 1-2): the evaluate map's ~11 per episode.

The evaluate map counts an episode's rows (`rows.MatchedRows`) and several selections of them (each verdict, each
ego-speed band, each object-size band). Counting each on its own costs a dozen small numpy calls per selection on
~100-frame episodes; here the selections are laid side by side (frames renumbered) and every count gets a leading
selection axis, so one call per count serves all of them. Each result is the accumulator
``ConfusionAccumulator(cfg).add_rows(rows)`` gives (tested equal); a selection outside the fast path (no frame,
several episodes, ``sample_unit: track_window``) is counted by ``add_rows`` itself, and one with nothing in it
(no frame, object or detection) adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, _class_sets
from perception_safety.evaluation.confusion.clusters import ClusterCounts
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.rows import MatchedRows


def _episode(rows: MatchedRows) -> str | None:
    """The one episode of every frame of ``rows`` (None: no frame, several, or a frame without one)."""
    eps = rows.frame_episodes
    if rows.n_frames == 0 or eps is None:
        return None
    first = eps[0]
    return str(first) if first != "" and (eps == first).all() else None


def _nothing(rows: MatchedRows) -> bool:
    """No frame, object, detection or fallback frame (e.g. the alarm verdict of an episode without alarms)."""
    return rows.n_frames == 0 and not (len(rows.gt_frame) or len(rows.det_frame) or len(rows.hard_frame))


def count_selections(selections: Sequence[MatchedRows], cfg: ConfusionConfig) -> list[ConfusionAccumulator]:
    """One accumulator per selection, each holding what ``add_rows`` of that selection alone gives."""
    accs = [ConfusionAccumulator(cfg) for _ in selections]
    fast = []
    for k, (acc, rows) in enumerate(zip(accs, selections, strict=True)):
        if rows.config is not cfg and rows.config != cfg:
            raise ValueError("these rows were matched with another confusion config than the accumulator's")
        episode = _episode(rows) if cfg.sample_unit == "frame" else None
        if cfg.sample_unit == "frame" and _nothing(rows):  # adds no count and no episode: the fresh accumulator
            acc.unmapped_detections.update(rows.unmapped_detections)
            acc.unmapped_ground_truth.update(rows.unmapped_ground_truth)
        elif episode is None:
            acc.add_rows(rows)
        else:
            fast.append((k, episode))
    if fast:
        _count_many([accs[k] for k, _ in fast], [selections[k] for k, _ in fast], [e for _, e in fast], cfg)
    return accs


def _count_many(accs: list[ConfusionAccumulator], sels: list[MatchedRows], episodes: list[str],
                cfg: ConfusionConfig) -> None:  # fmt: skip
    """`ConfusionAccumulator.add_rows` of each selection into its fresh accumulator, every count in one pass."""
    n_s, n_cls = len(sels), len(cfg.classes)
    c1, n_bins = n_cls + 1, len(cfg.bins)
    edges = np.asarray(cfg.bin_edges, dtype=np.float64)
    lut = accs[0]._lut
    p = len(lut)
    n_f = np.array([r.n_frames for r in sels], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(n_f)[:-1]])
    n_gt = [len(r.gt_frame) for r in sels]
    n_det = [len(r.det_frame) for r in sels]
    gt_sel = np.repeat(np.arange(n_s), n_gt)
    det_sel = np.repeat(np.arange(n_s), n_det)
    frame_sel = np.repeat(np.arange(n_s), n_f)
    gt_frame = np.concatenate([r.gt_frame for r in sels]) + first[gt_sel]
    b = np.concatenate([r.gt_bin for r in sels])
    pred = np.concatenate([r.gt_pred for r in sels])
    true = np.concatenate([r.gt_true for r in sels])
    dist = np.concatenate([r.gt_dist for r in sels])
    kept = np.flatnonzero((b >= 0) & (b < n_bins))
    bv, pv, tv, fv, sv = b[kept], pred[kept], true[kept], gt_frame[kept], gt_sel[kept]

    per_bin = np.bincount(((sv * n_bins + bv) * c1 + pv) * c1 + tv, minlength=n_s * n_bins * c1 * c1)
    per_bin = per_bin.reshape(n_s, n_bins, c1, c1)
    pooled = per_bin.sum(axis=1)
    total_f = int(n_f.sum())
    n_cells = total_f * n_bins
    cell = fv * n_bins + bv
    true_mask = _class_sets(cell, tv, n_cells, n_cls)
    pred_mask = _class_sets(cell, pv, n_cells, n_cls)
    empty = (true_mask == 0).reshape(total_f, n_bins)
    per_bin[:, :, n_cls, n_cls] += np.add.reduceat(empty, first, axis=0) if total_f else 0
    pooled[:, n_cls, n_cls] += np.bincount(frame_sel[empty.all(axis=1)], minlength=n_s)
    cell_bin = np.tile(np.arange(n_bins, dtype=np.int64), total_f)
    cell_sel = np.repeat(frame_sel, n_bins)
    key = ((cell_sel * n_bins + cell_bin) * p + lut[pred_mask]) * p + lut[true_mask]
    prop = np.bincount(key, minlength=n_s * n_bins * p * p).reshape(n_s, n_bins, p, p)
    frame_true = np.bitwise_or.reduce(true_mask.reshape(total_f, n_bins), axis=1)
    frame_pred = np.bitwise_or.reduce(pred_mask.reshape(total_f, n_bins), axis=1)
    prop_pooled = np.bincount((frame_sel * p + lut[frame_pred]) * p + lut[frame_true], minlength=n_s * p * p)
    prop_pooled = prop_pooled.reshape(n_s, p, p)

    det_matched = np.concatenate([r.det_matched for r in sels])
    det_out = np.concatenate([r.det_out for r in sels])
    det_bin = np.concatenate([np.full(len(r.det_frame), n_bins, dtype=np.int64) if r.det_bin is None else r.det_bin
                              for r in sels])  # fmt: skip
    det_cls = np.concatenate([r.det_cls for r in sels])
    un = np.flatnonzero(~det_matched)
    un_sel, un_bin, un_cls = det_sel[un], det_bin[un], det_cls[un]
    unmatched = np.bincount((un_sel * (n_bins + 1) + un_bin) * n_cls + un_cls, minlength=n_s * (n_bins + 1) * n_cls)
    unmatched = unmatched.reshape(n_s, n_bins + 1, n_cls)
    by_class = np.bincount(un_sel * n_cls + un_cls, minlength=n_s * n_cls).reshape(n_s, n_cls)

    def per_sel(which: np.ndarray) -> list[int]:
        return np.bincount(which, minlength=n_s).tolist()

    counts = {
        "detections_unannotated_without_distance": per_sel(un_sel[un_bin == n_bins]),
        "frames": n_f.tolist(),
        "ground_truth_binned": per_sel(sv),
        "ground_truth_below_range": per_sel(gt_sel[dist < edges[0]]),
        "ground_truth_beyond_range": per_sel(gt_sel[dist >= edges[-1]]),
        "detections": n_det,
        "detections_matched": per_sel(det_sel[det_matched]),
        "detections_matched_out_of_range": per_sel(det_sel[det_out]),
        "detections_unannotated": per_sel(un_sel),
        "hungarian_fallback_frames": [len(r.hard_frame) for r in sels],
    }
    for s, (acc, rows, episode) in enumerate(zip(accs, sels, episodes, strict=True)):
        acc.class_cm += per_bin[s]
        acc.class_cm_pooled += pooled[s]
        acc.prop_cm += prop[s]
        acc.prop_cm_pooled += prop_pooled[s]
        acc.unannotated_by_bin += unmatched[s]
        acc.unannotated_by_class += by_class[s]
        acc._cluster_parts.append(ClusterCounts.built((episode,), per_bin[s:s + 1], pooled[s:s + 1],
                                                      unmatched[s:s + 1], n_f[s:s + 1]))  # read-only views
        for name, values in counts.items():
            acc.counters[name] += int(values[s])
        acc.unmapped_detections.update(rows.unmapped_detections)
        acc.unmapped_ground_truth.update(rows.unmapped_ground_truth)
