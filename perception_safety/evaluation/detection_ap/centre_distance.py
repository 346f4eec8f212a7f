"""nuScenes-style average precision for 3D object lists: matching by bird's-eye-view centre distance.

The rule of the nuScenes detection benchmark (Caesar et al., nuScenes, Sec. 4.1): per class and distance
threshold ``d`` in {0.5, 1, 2, 4} m, predictions in descending score take the closest still-unmatched ground
truth of their sample and class; a pair closer than ``d`` is a true positive. Precision is interpolated at 101
recall points (0 beyond the last recall reached); AP is the mean of the precision above 10 % recall, less the
10 % minimum precision, normalised by 0.9. mAP averages AP over the thresholds (and classes).

Per distance bin, both the ground truth and the predictions are restricted to the bin by their own distance
from the ego (the benchmark's class ranges do the same with one range).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perception_safety.core.types import Frame

NUSCENES_THRESHOLDS_M = (0.5, 1.0, 2.0, 4.0)
MIN_RECALL = 0.1
MIN_PRECISION = 0.1
_RECALL_GRID = np.linspace(0.0, 1.0, 101)


@dataclass(frozen=True)
class CentreObjects:
    """Flat arrays of one set of objects: sample index, class, BEV centre (m), distance (m), score."""

    sample: np.ndarray
    classes: np.ndarray
    xy: np.ndarray
    distance: np.ndarray
    score: np.ndarray
    episode: np.ndarray

    def select(self, keep: np.ndarray) -> CentreObjects:
        return CentreObjects(*(a[keep] for a in (self.sample, self.classes, self.xy, self.distance, self.score,
                                                  self.episode)))


def objects_from_frames(
    frames: Iterable[Frame], episodes: Sequence[str] | None = None, classify: Callable[[str], str | None] | None = None
) -> tuple[CentreObjects, CentreObjects]:
    """Ground truth and detections of frames as `CentreObjects` (detections need a position).

    ``episodes`` (one name per frame) is the resampling unit of the interval; default: one episode. ``classify``
    maps a label to its evaluation class (None: left out), e.g. the confusion matrices' class map.
    """
    classify = classify or (lambda label: label)
    gt: list[tuple[int, str, float, float, float, str]] = []
    det: list[tuple[int, str, float, float, float, float, str]] = []
    for i, frame in enumerate(frames):
        ep = episodes[i] if episodes is not None else ""
        for g in frame.ground_truth:
            if (name := classify(g.class_id)) is None:
                continue
            x, y = g.box.center if g.position is None else g.position[:2]
            gt.append((i, name, x, y, g.distance, ep))
        for d in frame.detections:
            if d.position is None:
                raise ValueError(f"frame {i}: detection {d.class_id} has no position (not a 3D object list)")
            if (name := classify(d.class_id)) is None:
                continue
            det.append((i, name, d.position[0], d.position[1], float(d.distance or 0.0), d.score, ep))

    def pack(rows: list[tuple[Any, ...]], scored: bool) -> CentreObjects:
        n = len(rows)
        cols = list(zip(*rows, strict=True)) if rows else [()] * (7 if scored else 6)
        return CentreObjects(
            sample=np.asarray(cols[0], dtype=np.int64),
            classes=np.asarray(cols[1], dtype=object),
            xy=np.asarray(list(zip(cols[2], cols[3], strict=True)), dtype=np.float64).reshape(n, 2),
            distance=np.asarray(cols[4], dtype=np.float64),
            score=np.asarray(cols[5] if scored else np.ones(n), dtype=np.float64),
            episode=np.asarray(cols[-1], dtype=object),
        )

    return pack(gt, False), pack(det, True)


def _ranked(score: np.ndarray) -> np.ndarray:
    """Predictions in descending score, ties: the later prediction first."""
    return np.lexsort((-np.arange(len(score)), -score))


def centre_outcomes(gt: CentreObjects, pred: CentreObjects, threshold: float) -> np.ndarray:
    """Per prediction (in ``pred``'s order): a true positive?

    Greedy in descending score (ties: the later prediction first); each takes the closest unmatched ground truth
    of its sample (ties: the first), a true positive when closer than ``threshold``. Matching never crosses a
    sample, so a prediction's outcome depends only on its sample's objects: all samples advance together, the
    k-th prediction of every sample in one step (distances to the sample's ground truth padded side by side,
    taken ones at infinity).
    """
    tp = np.zeros(len(pred.sample), dtype=bool)
    if len(gt.sample) == 0 or len(pred.sample) == 0:
        return tp
    by_sample = np.argsort(gt.sample, kind="stable")
    samples, first, count = np.unique(gt.sample[by_sample], return_index=True, return_counts=True)
    ranked = _ranked(pred.score)
    slot = np.minimum(np.searchsorted(samples, pred.sample[ranked]), samples.size - 1)
    has = samples[slot] == pred.sample[ranked]
    ranked, slot = ranked[has], slot[has]  # predictions of samples with ground truth, in rank order
    grouped = np.argsort(slot, kind="stable")  # by sample, rank order within
    starts = np.searchsorted(slot[grouped], np.arange(samples.size))
    level = np.empty(slot.size, dtype=np.int64)
    level[grouped] = np.arange(slot.size) - starts[slot[grouped]]  # how many of its sample's predictions rank above
    width = int(count.max())
    pos = np.arange(width)
    inside = pos[None, :] < count[:, None]
    gt_at = by_sample[np.minimum(first[:, None] + pos, len(gt.sample) - 1)]
    gx, gy = gt.xy[gt_at, 0], gt.xy[gt_at, 1]
    taken = ~inside
    by_level = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[by_level], np.arange(int(level.max()) + 2))
    for k in range(bounds.size - 1):
        step = by_level[bounds[k] : bounds[k + 1]]
        s, p = slot[step], ranked[step]
        dist = np.hypot(gx[s] - pred.xy[p, 0, None], gy[s] - pred.xy[p, 1, None])
        dist[taken[s]] = np.inf
        j = np.argmin(dist, axis=1)  # the first of equal (or NaN) distances, as over the free ones in order
        hit = dist[np.arange(s.size), j] < threshold
        taken[s[hit], j[hit]] = True
        tp[p[hit]] = True
    return tp


def _curve(tp: np.ndarray, npos: int) -> tuple[np.ndarray, int, int]:
    """Interpolated precision at the 101 recall points from the ranked TP flags; (precision, positives, TPs)."""
    n_tp = int(tp.sum())
    if npos == 0 or n_tp == 0:
        return np.zeros_like(_RECALL_GRID), npos, n_tp
    ctp = np.cumsum(tp).astype(float)
    cfp = np.cumsum(~tp).astype(float)
    prec = ctp / (ctp + cfp)
    rec = ctp / float(npos)
    return np.interp(_RECALL_GRID, rec, prec, right=0.0), npos, n_tp


def precision_recall(gt: CentreObjects, pred: CentreObjects, threshold: float) -> tuple[np.ndarray, int, int]:
    """Interpolated precision at the 101 recall points for one class's objects; also (positives, true positives)
    (`centre_outcomes`' rule)."""
    return _curve(centre_outcomes(gt, pred, threshold)[_ranked(pred.score)], len(gt.sample))


def ap_from_precision(precision: np.ndarray) -> float:
    """Normalised area above the 10 % operating points (nuScenes' calc_ap rule)."""
    p = np.asarray(precision, dtype=np.float64)[round(100 * MIN_RECALL) + 1:] - MIN_PRECISION
    return float(np.mean(np.clip(p, 0.0, None)) / (1.0 - MIN_PRECISION))


def centre_ap(gt: CentreObjects, pred: CentreObjects, class_id: str, threshold: float) -> tuple[float | None, int, int]:
    """AP of one class at one centre-distance threshold: (AP or None without ground truth, positives, TPs)."""
    g = gt.select(gt.classes == class_id)
    p = pred.select(pred.classes == class_id)
    prec, npos, ntp = precision_recall(g, p, threshold)
    return (ap_from_precision(prec) if npos else None), npos, ntp


def _cell(gt: CentreObjects, pred: CentreObjects, class_id: str, thresholds: Sequence[float],
          draws: list[np.ndarray], episodes: np.ndarray, level: float) -> dict[str, Any]:
    """One cell in the shape of the COCO-style table (``ap`` with ``ap_lower``/``ap_upper``), AP per threshold."""
    per = {f"{t:g} m": centre_ap(gt, pred, class_id, t) for t in thresholds}
    aps = [v[0] for v in per.values() if v[0] is not None]
    g_eps = set(gt.episode[gt.classes == class_id].astype(str).tolist())
    p_eps = set(pred.episode[pred.classes == class_id].astype(str).tolist())
    cell: dict[str, Any] = {
        "ap": float(np.mean(aps)) if aps else None,
        "ap_by_threshold": {k: v[0] for k, v in per.items()},
        "true_positives_by_threshold": {k: v[2] for k, v in per.items()},
        "ground_truth": int(np.count_nonzero(gt.classes == class_id)),
        "detections": int(np.count_nonzero(pred.classes == class_id)),
        "episodes": len(g_eps | p_eps),
        "ap_lower": None,
        "ap_upper": None,
    }
    if cell["ap"] is None:
        cell["interval_note"] = "no ground truth: AP undefined"
    elif not draws:
        cell["interval_note"] = f"no interval: {len(episodes)} episode(s), need >= 2 to resample"
    else:
        values = _resampled_aps(gt, pred, class_id, thresholds, draws, episodes)
        if values:
            tail = (1.0 - level) / 2.0
            cell["ap_lower"], cell["ap_upper"] = (float(np.quantile(values, tail)),
                                                  float(np.quantile(values, 1.0 - tail)))
        cell["interval_note"] = (f"{100 * level:g} % percentile bootstrap over {len(episodes)} episodes "
                                 f"({len(values)}/{len(draws)} resamples with ground truth)")
    return cell


def centre_ap_results(
    gt: CentreObjects,
    pred: CentreObjects,
    bin_edges: Sequence[float],
    thresholds: Sequence[float] = NUSCENES_THRESHOLDS_M,
    n_boot: int = 100,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """``{class: {"pooled": cell, "bins": {"[lo, hi)": cell}}}`` (the COCO-style table's shape): ``ap`` is the mean
    AP over ``thresholds`` with a percentile bootstrap interval over episodes (none with fewer than 2 episodes:
    no interval without independent units), ``ap_by_threshold`` each threshold's AP."""
    out: dict[str, Any] = {}
    classes = sorted(set(gt.classes.tolist()) | set(pred.classes.tolist()))
    episodes = np.unique(np.concatenate([gt.episode, pred.episode]).astype(str))
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(episodes), len(episodes)) for _ in range(n_boot)] if len(episodes) >= 2 else []
    for c in classes:
        bins = {}
        for lo, hi in itertools.pairwise(bin_edges):
            g = gt.select((gt.distance >= lo) & (gt.distance < hi))
            p = pred.select((pred.distance >= lo) & (pred.distance < hi))
            bins[f"[{lo:g}, {hi:g})"] = _cell(g, p, c, thresholds, draws, episodes, level)
        out[c] = {"pooled": _cell(gt, pred, c, thresholds, draws, episodes, level), "bins": bins,
                  "detections_without_distance": 0}
    return out


def _resampled_aps(gt: CentreObjects, pred: CentreObjects, class_id: str, thresholds: Sequence[float],
                   draws: list[np.ndarray], episodes: np.ndarray) -> list[float]:
    """The mean AP over ``thresholds`` of each resample with ground truth of the class. A drawn episode's copy is a
    distinct set of samples and matching never crosses a sample, so every prediction of a copy has its outcome on
    the full data (matched once per threshold); a resample only ranks the copies' predictions (descending score,
    ties: the later one in draw order first, as the resampled list would be ranked) and counts: the same numbers as
    matching each resample anew."""
    g, p = gt.select(gt.classes == class_id), pred.select(pred.classes == class_id)
    g_ep, p_ep = g.episode.astype(str), p.episode.astype(str)
    positives = np.array([np.count_nonzero(g_ep == e) for e in episodes])
    members = [np.flatnonzero(p_ep == e) for e in episodes]
    flags = [centre_outcomes(g, p, t) for t in thresholds]
    values = []
    for draw in draws:
        npos = int(positives[draw].sum())
        if npos == 0:
            continue
        idx = np.concatenate([members[e] for e in draw.tolist()])
        ranked = idx[_ranked(p.score[idx])]
        values.append(float(np.mean([ap_from_precision(_curve(f[ranked], npos)[0]) for f in flags])))
    return values


def to_json(objs: CentreObjects) -> dict[str, list[Any]]:
    """The arrays as JSON lists (the evaluate map's partial)."""
    return {"sample": objs.sample.tolist(), "classes": [str(c) for c in objs.classes], "xy": objs.xy.tolist(),
            "distance": objs.distance.tolist(), "score": objs.score.tolist(),
            "episode": [str(e) for e in objs.episode]}


def _from_json(d: dict[str, list[Any]], offset: int) -> CentreObjects:
    n = len(d["classes"])
    return CentreObjects(
        np.asarray(d["sample"], dtype=np.int64) + offset,
        np.asarray(d["classes"], dtype=object),
        np.asarray(d["xy"], dtype=np.float64).reshape(n, 2),
        np.asarray(d["distance"], dtype=np.float64),
        np.asarray(d["score"], dtype=np.float64),
        np.asarray(d["episode"], dtype=object),
    )


def _concat(parts: Sequence[CentreObjects]) -> CentreObjects:
    return CentreObjects(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                           ("sample", "classes", "xy", "distance", "score", "episode")))


def centre_partial(frames: Sequence[Frame], episode: str, classify: Callable[[str], str | None] | None = None
                   ) -> dict[str, Any]:
    """The map's partial of one episode's frames: ground truth and detections as JSON, and the frame count."""
    gt, det = objects_from_frames(frames, [f.episode or episode for f in frames], classify)
    return {"frames": len(frames), "gt": to_json(gt), "det": to_json(det)}


def concat_partials(parts: Sequence[dict[str, Any]]) -> tuple[CentreObjects, CentreObjects]:
    """Ground truth and detections of all partials, frames renumbered so every partial's samples stay distinct."""
    gts, dets, offset = [], [], 0
    for p in parts:
        gts.append(_from_json(p["gt"], offset))
        dets.append(_from_json(p["det"], offset))
        offset += int(p["frames"])
    if not gts:
        empty = {"sample": [], "classes": [], "xy": [], "distance": [], "score": [], "episode": []}
        return _from_json(empty, 0), _from_json(empty, 0)
    return _concat(gts), _concat(dets)
