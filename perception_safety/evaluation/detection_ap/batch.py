"""AP records of a whole columnar `FrameBatch` at once (the evaluate map's path; `frames.records_from_frames` is the
per-image one): the same records, in the same order, as adding each frame with `APRecords.add_image`.

Each (frame, class) is one COCO image-and-category. Detections are ranked per group (descending score, input order
on ties) and cut to ``max_detections``; candidate pairs are the same-frame, same-class pairs with overlap >= 0.5
(the lowest threshold). A group where no detection has two candidates and no object two is decided pair by pair
(a detection takes its one candidate at every threshold the overlap reaches, nobody competes for it); any other
group, and any frame with crowd regions, goes through `matching.match_image` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception_safety.core.iou import iou_pairs
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.detection_ap.matching import AP50, IOU_THRESHOLDS, match_image
from perception_safety.evaluation.detection_ap.records import APRecords, _pack

_LIMIT = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)


def _first_appearance(names: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct names in order of first appearance and each item's index among them."""
    if len(names) == 0:
        return [], np.zeros(0, dtype=np.int64)
    uniq, first, inverse = np.unique(names, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return [str(u) for u in uniq[order]], rank[inverse.reshape(-1)]


def _pairs(batch: FrameBatch, dets: np.ndarray, det_frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (detection in ``dets``, ground truth of its frame and class) pair."""
    start, count = batch.gt_offsets[det_frame], np.diff(batch.gt_offsets)[det_frame]
    det = np.repeat(dets, count)
    first = np.repeat(np.cumsum(count) - count, count)
    gt = np.repeat(start, count) + np.arange(len(det)) - first
    same = batch.det_classes[det] == batch.gt_classes[gt]
    return det[same], gt[same]


def records_from_batch(
    batch: FrameBatch,
    classes: Sequence[str],
    edges: Sequence[float],
    det_distances: np.ndarray,
    max_detections: int = 100,
) -> APRecords:
    """The AP records of every frame of ``batch`` (episodes: ``batch.frame_episodes``; detection scores:
    ``batch.det_scores``; ``det_distances`` the estimate of each detection, NaN = unknown)."""
    rec = APRecords(tuple(classes), tuple(float(e) for e in edges), max_detections)
    n_f = batch.n_frames
    episodes = batch.frame_episodes if batch.frame_episodes is not None else np.full(n_f, "", dtype=object)
    rec.episodes, ep_of_frame = _first_appearance(np.asarray(episodes, dtype=str))
    ranges = rec.ranges
    lo = np.array([r[0] for r in ranges])[:, None]
    hi = np.array([r[1] for r in ranges])[:, None]
    n_r = len(ranges)

    gt_frame = np.repeat(np.arange(n_f), np.diff(batch.gt_offsets))
    gt_in = (batch.gt_distances[None, :] >= lo) & (batch.gt_distances[None, :] < hi)  # (R, G) regular
    n_c, n_e = len(classes), max(len(rec.episodes), 1)
    key = batch.gt_classes * n_e + ep_of_frame[gt_frame]
    for r in range(n_r):
        counts = np.bincount(key[gt_in[r]], minlength=n_c * n_e)
        for k in np.flatnonzero(counts).tolist():
            rec.n_gt[(r, k // n_e, k % n_e)] = int(counts[k])

    n_d = len(batch.det_boxes)
    if n_d == 0:
        return rec
    scores = np.asarray(batch.det_scores, dtype=np.float64)
    det_frame = np.repeat(np.arange(n_f), np.diff(batch.det_offsets))
    order = np.lexsort((np.arange(n_d), -scores, batch.det_classes, det_frame))  # per group: best first
    group = det_frame[order] * n_c + batch.det_classes[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    rank = np.arange(n_d) - np.repeat(starts, np.diff(np.r_[starts, n_d]))
    kept = order[rank < max_detections]  # record order: frame, class, score

    det_d = np.asarray(det_distances, dtype=np.float64)
    outside = ~((det_d[None, :] >= lo) & (det_d[None, :] < hi))  # NaN: outside every range ...
    outside[0] &= ~np.isnan(det_d)  # ... except pooled
    pd, pg = _pairs(batch, kept, det_frame[kept])
    overlap = iou_pairs(batch.det_boxes[pd], batch.gt_boxes[pg])
    cand = overlap >= _LIMIT.min()
    pd, pg, overlap = pd[cand], pg[cand], overlap[cand]
    busy_det = np.bincount(pd, minlength=n_d) > 1
    busy_gt = np.bincount(pg, minlength=len(batch.gt_boxes)) > 1
    ambiguous = np.zeros(n_f * n_c, dtype=bool)
    ambiguous[(det_frame * n_c + batch.det_classes)[busy_det]] = True
    ambiguous[(gt_frame * n_c + batch.gt_classes)[busy_gt]] = True

    # one candidate at most: matched where the overlap reaches the threshold, ignored where its object is
    matched = np.zeros((n_r, len(_LIMIT), n_d), dtype=bool)
    ignored = np.zeros((n_r, len(_LIMIT), n_d), dtype=bool)
    reach = overlap[None, :] >= _LIMIT[:, None]  # (T, pairs)
    matched[:, :, pd] = reach[None]
    ignored[:, :, pd] = reach[None] & ~gt_in[:, None, pg]
    ignored |= ~matched & outside[:, None, :]
    tp = (matched & ~ignored)[:, :, kept]
    fp = (~matched & ~ignored)[:, :, kept]

    group_of_kept = det_frame[kept] * n_c + batch.det_classes[kept]
    for g in np.flatnonzero(ambiguous).tolist():
        _match_group(batch, g, n_c, gt_in, outside, max_detections, group_of_kept, tp, fp)

    tp_bits, fp_bits = _pack(tp).T, _pack(fp).T
    cls = batch.det_classes[kept]
    no_distance = np.isnan(det_d[kept]) & fp[0, AP50]
    rec.without_distance = np.bincount(cls[no_distance], minlength=n_c).tolist()
    rec.score = scores[kept].tolist()
    rec.cls = cls.tolist()
    rec.episode = ep_of_frame[det_frame[kept]].tolist()
    rec.tp = tp_bits.tolist()
    rec.fp = fp_bits.tolist()
    return rec


def _match_group(batch: FrameBatch, g: int, n_c: int, gt_in: np.ndarray, outside: np.ndarray, max_detections: int,
                 group_of_kept: np.ndarray, tp: np.ndarray, fp: np.ndarray) -> None:
    """Overwrite the flags of group ``g`` (frame * classes + class) with `match_image`'s on its boxes."""
    f, c = divmod(g, n_c)
    d0, d1 = batch.det_offsets[f], batch.det_offsets[f + 1]
    g0, g1 = batch.gt_offsets[f], batch.gt_offsets[f + 1]
    ds = d0 + np.flatnonzero(batch.det_classes[d0:d1] == c)
    gs = g0 + np.flatnonzero(batch.gt_classes[g0:g1] == c)
    m = match_image(batch.det_boxes[ds], batch.det_scores[ds], batch.gt_boxes[gs], ~gt_in[:, gs],
                    np.zeros(len(gs), bool), outside[:, ds], max_detections=max_detections)  # fmt: skip
    rows = np.flatnonzero(group_of_kept == g)
    tp[:, :, rows] = m.tp
    fp[:, :, rows] = m.fp
