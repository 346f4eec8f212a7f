"""One-to-one matching of a whole columnar batch at once: the same matching as per-frame `core.match_boxes`.

Candidate pairs come from a sorted window join on ``x_min`` (a superset of the admissible pairs), their IoU from
per-coordinate columns (`core.iou.iou_of_columns`, the arithmetic of every IoU of the package); a pair whose
detection and object have no other admissible pair is its own unique optimum, other small connected components of
the admissible-pair graph are solved exactly by enumeration, and only frames with a larger component or a near-tie go
to the per-frame Hungarian `core.match_boxes` (or `match_centres`).
"""

from __future__ import annotations

import numpy as np

from perception_safety.core.iou import iou_of_columns
from perception_safety.core.matching import match_boxes, match_centres
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.centre_pairs import centre_candidate_pairs
from perception_safety.evaluation.confusion.components import small_component_matchings
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.frame_search import FrameSortedKeys

_EMPTY = np.zeros(0, dtype=np.int64)
_BUCKET_SEARCH_MIN = 4096  # objects in a batch from which `frame_search` replaces the binary searches


def frame_index(offsets: np.ndarray) -> np.ndarray:
    """Frame of every item of a batch whose frame ``f`` owns items ``offsets[f]:offsets[f+1]``."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def _columns(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``x_min, y_min, x_max, y_max`` as contiguous columns, the area (as `core.iou.box_areas`) and a mask of the
    boxes that can overlap anything: finite with positive width and height (a box with a NaN or infinite
    coordinate, or an empty one, has IoU 0 or NaN with every box, so it is never admissible)."""
    x0, y0, x1, y1 = np.ascontiguousarray(boxes.T)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, an unusable box
        w, h = x1 - x0, y1 - y0
    area = np.clip(w, 0.0, None) * np.clip(h, 0.0, None)
    usable = (w > 0.0) & (w < np.inf) & (h > 0.0) & (h < np.inf)
    return x0, y0, x1, y1, area, usable


def candidate_pairs(
    batch: FrameBatch,
    iou_threshold: float,
    det_frame: np.ndarray | None = None,
    gt_frame: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(detection, object, IoU)`` for pairs of the same frame that can reach ``iou_threshold``.

    IoU >= t > 0 forces the x-overlap ``ix >= t * w_gt`` and ``ix >= t * w_det`` (hence ``w_gt <= w_det / t``), so
    ``x_min_gt`` lies in ``[x_min_det - (1 - t) * min(W, w_det / t), x_max_det - t * w_det]`` (W: the widest object);
    one sort of the objects by (frame, ``x_min``) and two searches within the frame (`frame_search`) give every
    detection's window, clipped to its own frame. Boxes that can overlap nothing (`_columns`) take part in no pair.
    """
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    if n_det == 0 or n_gt == 0:
        return _EMPTY, _EMPTY, np.zeros(0)
    det_frame = frame_index(batch.det_offsets) if det_frame is None else det_frame
    gt_frame = frame_index(batch.gt_offsets) if gt_frame is None else gt_frame
    d, g = _columns(batch.det_boxes), _columns(batch.gt_boxes)
    d_ok, g_ok = d[5], g[5]
    if not d_ok.any() or not g_ok.any():
        return _EMPTY, _EMPTY, np.zeros(0)
    all_ok = bool(d_ok.all() and g_ok.all())
    gx, gw = g[0], g[2] - g[0]
    dx0, dx1 = d[0], d[2]
    if all_ok:
        w_max = float(gw.max())
        lo_x = min(float(dx0.min()), float(gx.min()))
        hi_x = max(float(dx1.max()), float(g[2].max()))
    else:
        w_max = float(gw[g_ok].max())
        lo_x = min(float(dx0[d_ok].min()), float(gx[g_ok].min()))
        hi_x = max(float(dx1[d_ok].max()), float(g[2][g_ok].max()))
    shift = w_max + 1.0 - lo_x  # every shifted x and window bound lies in (0, stride)
    stride = (hi_x - lo_x) + 2.0 * w_max + 4.0
    local = gx + shift
    if not all_ok:
        local = np.where(g_ok, local, 0.5)  # before every window of its frame
    key_g = gt_frame * stride
    key_g += local
    order = np.argsort(key_g, kind="stable")
    sorted_g = key_g[order]
    t = iou_threshold
    with np.errstate(invalid="ignore", over="ignore"):  # unusable detections get NaN windows, emptied below
        w_d = dx1 - dx0
        reach = (1.0 - t) * (np.minimum(w_d / t, w_max) if t > 0.0 else w_max)
        base = det_frame * stride
        base += shift
        lo = base + dx0
        lo -= reach
        hi = base + dx1
        hi -= t * w_d
        margin = np.abs(hi)
        margin += 1.0
        margin *= 1e-9
        margin += 1e-6
        lo -= margin
        hi += margin
    if not all_ok:  # unusable detections: an empty window at the start of their frame (no steps)
        lo[~d_ok] = det_frame[~d_ok] * stride + 0.25
        hi[~d_ok] = lo[~d_ok]
    # The bucket table pays off on large batches only (its set-up is ~30 us); with no more frames than objects it
    # holds at most 4 entries per object.
    if n_gt >= _BUCKET_SEARCH_MIN and batch.n_frames <= n_gt:
        index = FrameSortedKeys.build(sorted_g, gt_frame, batch.n_frames, stride)
        first = index.search(lo, det_frame, "left")
        last = index.search(hi, det_frame, "right")
    else:
        first = np.searchsorted(sorted_g, lo, side="left")
        last = np.searchsorted(sorted_g, hi, side="right")
    # The objects of frame f are sorted_g[gt_offsets[f]:gt_offsets[f + 1]]: clip every window to its own frame.
    np.maximum(first, batch.gt_offsets[det_frame], out=first)
    np.minimum(last, batch.gt_offsets[det_frame + 1], out=last)
    counts = last - first
    np.maximum(counts, 0, out=counts)
    if not all_ok:
        counts[~d_ok] = 0
    total = int(counts.sum())
    if total == 0:
        return _EMPTY, _EMPTY, np.zeros(0)
    di = np.repeat(np.arange(n_det, dtype=np.int64), counts)
    start = np.cumsum(counts)
    start -= counts
    first -= start
    pos = np.repeat(first, counts)
    pos += np.arange(total, dtype=np.int64)
    gi = order[pos]
    return di, gi, iou_of_columns(d, g, di, gi)


def match_batch(
    batch: FrameBatch,
    iou_threshold: float,
    class_aware: bool,
    matching: str = "iou",
    max_distance: float = 2.0,
    frames: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, int]:
    """For every ground-truth object of the batch, the index of its matched detection or -1.

    Same matching as per-frame `match_boxes` (maximum summed IoU over admissible pairs): a pair
    whose detection and object have no other admissible pair is always matched; other connected
    components of the admissible-pair graph with at most ``MAX_COMPONENT_EDGES`` pairs are solved
    exactly by enumeration; frames with a larger component or a near-tie (within 1e-9) go to
    `match_boxes` whole. Also returns how many frames did. ``frames``: ``(det_frame, gt_frame)``
    (`frame_index` of the batch's offsets) when the caller has them already.
    """
    gt_match, hard_frames, _ = _match(batch, iou_threshold, class_aware, matching, max_distance, frames, None)
    return gt_match, len(hard_frames)


def match_batch_groups(
    batch: FrameBatch, cfg: ConfusionConfig, frames: tuple[np.ndarray, np.ndarray] | None = None,
    groups: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """`match_batch` with ``cfg``'s matching and the per-frame fallbacks named: ``(gt_match, hard_frames,
    hard_groups)``.

    ``groups``: ``(det_group, gt_group)``, an integer per box; only boxes of the same group may pair, so the result
    equals matching each group's boxes on their own (e.g. one object-size band), every group's frames solved
    apart; a (frame, group) that needs `match_boxes` is listed once (``hard_groups`` all 0 without groups).
    """
    return _match(batch, cfg.iou_threshold, cfg.class_aware, cfg.matching, cfg.centre_distance_m, frames, groups)


def _match(
    batch: FrameBatch, iou_threshold: float, class_aware: bool, matching: str, max_distance: float,
    frames: tuple[np.ndarray, np.ndarray] | None, groups: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    gt_match = np.full(n_gt, -1, dtype=np.int64)
    if matching == "centre_distance":  # 3D object lists: weight 1 - d / max_distance (core.matching.match_centres)
        di, gi, iou = centre_candidate_pairs(batch, max_distance)
        adm = iou > 0.0
    else:
        det_frame, gt_frame = frames if frames is not None else (None, None)
        di, gi, iou = candidate_pairs(batch, iou_threshold, det_frame, gt_frame)
        adm = iou >= iou_threshold
        adm &= iou > 0.0
    if len(di) == 0:
        return gt_match, _EMPTY, _EMPTY
    if class_aware:
        adm &= batch.det_classes.take(di) == batch.gt_classes.take(gi)
    if groups is not None:
        adm &= groups[0].take(di) == groups[1].take(gi)
    keep = np.flatnonzero(adm)  # a gather by index is several times faster than a boolean mask here
    ed, eg, ew = di.take(keep), gi.take(keep), iou.take(keep)
    # A pair is simple when its detection and its object are in no other admissible pair; ``ed`` is sorted (the
    # candidates come detection by detection), so a detection's only pair is a run of length one.
    alone = np.ones(len(ed) + 1, dtype=bool)
    np.not_equal(ed[1:], ed[:-1], out=alone[1:-1])
    simple = alone[1:] & alone[:-1]
    simple &= np.bincount(eg, minlength=n_gt).take(eg) == 1
    one = np.flatnonzero(simple)
    gt_match[eg.take(one)] = ed.take(one)
    rest = np.flatnonzero(~simple)
    if len(rest) == 0:
        return gt_match, _EMPTY, _EMPTY
    chosen, unresolved, _ = small_component_matchings(ed.take(rest), eg.take(rest), ew.take(rest), n_det)
    gt_match[eg[rest[chosen]]] = ed[rest[chosen]]
    hard_gt = eg[rest[unresolved]]
    if len(hard_gt) == 0:
        return gt_match, _EMPTY, _EMPTY
    edge_frame = np.searchsorted(batch.gt_offsets, hard_gt, side="right") - 1
    edge_group = groups[1].take(hard_gt) if groups is not None else np.zeros(len(hard_gt), dtype=np.int64)
    hard = np.unique(np.stack([edge_frame, edge_group], axis=1), axis=0)  # by frame, then group
    solve = match_centres if matching == "centre_distance" else match_boxes
    for f, grp in hard.tolist():
        d0, d1, g0, g1 = (int(batch.det_offsets[f]), int(batch.det_offsets[f + 1]), int(batch.gt_offsets[f]),
                          int(batch.gt_offsets[f + 1]))  # fmt: skip
        d: np.ndarray | slice = slice(d0, d1)
        g: np.ndarray | slice = slice(g0, g1)
        if groups is not None:
            d = d0 + np.flatnonzero(groups[0][d0:d1] == grp)
            g = g0 + np.flatnonzero(groups[1][g0:g1] == grp)
        m = solve(
            batch.det_boxes[d],
            batch.gt_boxes[g],
            max_distance if matching == "centre_distance" else iou_threshold,
            batch.det_classes[d].tolist(),
            batch.gt_classes[g].tolist(),
            class_aware,
        )
        gt_match[g] = -1
        if groups is None:
            gt_match[g0 + m.gt_indices] = d0 + m.det_indices
        else:
            gt_match[g[m.gt_indices]] = d[m.det_indices]  # type: ignore[index]
    return gt_match, hard[:, 0].copy(), hard[:, 1].copy()
