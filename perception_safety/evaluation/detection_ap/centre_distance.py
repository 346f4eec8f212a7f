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
from collections.abc import Iterable, Sequence
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
    frames: Iterable[Frame], episodes: Sequence[str] | None = None
) -> tuple[CentreObjects, CentreObjects]:
    """Ground truth and detections of frames as `CentreObjects` (detections need a position).

    ``episodes`` (one name per frame) is the resampling unit of the interval; default: one episode.
    """
    gt: list[tuple[int, str, float, float, float, str]] = []
    det: list[tuple[int, str, float, float, float, float, str]] = []
    for i, frame in enumerate(frames):
        ep = episodes[i] if episodes is not None else ""
        for g in frame.ground_truth:
            x, y = g.box.center if g.position is None else g.position[:2]
            gt.append((i, g.class_id, x, y, g.distance, ep))
        for d in frame.detections:
            if d.position is None:
                raise ValueError(f"frame {i}: detection {d.class_id} has no position (not a 3D object list)")
            det.append((i, d.class_id, d.position[0], d.position[1], float(d.distance or 0.0), d.score, ep))

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


def precision_recall(gt: CentreObjects, pred: CentreObjects, threshold: float) -> tuple[np.ndarray, int, int]:
    """Interpolated precision at the 101 recall points for one class's objects; also (positives, true positives).

    Greedy in descending score (ties: the later prediction first); each takes the closest unmatched ground truth
    of its sample (ties: the first), a true positive when closer than ``threshold``.
    """
    npos = len(gt.sample)
    if npos == 0 or len(pred.sample) == 0:
        return np.zeros_like(_RECALL_GRID), npos, 0
    order = np.lexsort((-np.arange(len(pred.sample)), -pred.score))
    by_sample: dict[int, np.ndarray] = {}
    for s in np.unique(gt.sample):
        by_sample[int(s)] = np.flatnonzero(gt.sample == s)
    taken = np.zeros(npos, dtype=bool)
    tp = np.zeros(len(order), dtype=bool)
    for k, p in enumerate(order):
        cand = by_sample.get(int(pred.sample[p]))
        if cand is None:
            continue
        free = cand[~taken[cand]]
        if len(free) == 0:
            continue
        dist = np.hypot(*(gt.xy[free] - pred.xy[p]).T)
        j = int(np.argmin(dist))
        if dist[j] < threshold:
            taken[free[j]] = True
            tp[k] = True
    n_tp = int(tp.sum())
    if n_tp == 0:
        return np.zeros_like(_RECALL_GRID), npos, 0
    ctp = np.cumsum(tp).astype(float)
    cfp = np.cumsum(~tp).astype(float)
    prec = ctp / (ctp + cfp)
    rec = ctp / float(npos)
    return np.interp(_RECALL_GRID, rec, prec, right=0.0), npos, n_tp


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


def _cell(gt: CentreObjects, pred: CentreObjects, class_id: str, thresholds: Sequence[float]) -> dict[str, Any]:
    per = {f"{t:g}m": centre_ap(gt, pred, class_id, t) for t in thresholds}
    aps = [v[0] for v in per.values() if v[0] is not None]
    return {
        "ap": float(np.mean(aps)) if aps else None,
        "ap_by_threshold": {k: v[0] for k, v in per.items()},
        "true_positives_by_threshold": {k: v[2] for k, v in per.items()},
        "ground_truth": int(np.count_nonzero(gt.classes == class_id)),
        "predictions": int(np.count_nonzero(pred.classes == class_id)),
    }


def centre_ap_results(
    gt: CentreObjects,
    pred: CentreObjects,
    bin_edges: Sequence[float],
    thresholds: Sequence[float] = NUSCENES_THRESHOLDS_M,
    n_boot: int = 100,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """``class -> {pooled, bins: {"lo-hi m": cell}}`` with the mean AP over ``thresholds`` and, pooled, a percentile
    bootstrap interval over episodes (None with fewer than 2 episodes: no interval without independent units)."""
    out: dict[str, Any] = {}
    classes = sorted(set(gt.classes.tolist()) | set(pred.classes.tolist()))
    episodes = np.unique(np.concatenate([gt.episode, pred.episode]).astype(str))
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(episodes), len(episodes)) for _ in range(n_boot)] if len(episodes) >= 2 else []
    for c in classes:
        pooled = _cell(gt, pred, c, thresholds)
        pooled["episodes"] = len(episodes)
        pooled["interval"] = _bootstrap(gt, pred, c, thresholds, episodes, draws, level)
        bins = {}
        for lo, hi in itertools.pairwise(bin_edges):
            g = gt.select((gt.distance >= lo) & (gt.distance < hi))
            p = pred.select((pred.distance >= lo) & (pred.distance < hi))
            bins[f"{lo:g}-{hi:g} m"] = _cell(g, p, c, thresholds)
        out[c] = {"pooled": pooled, "bins": bins}
    return out


def _bootstrap(gt: CentreObjects, pred: CentreObjects, class_id: str, thresholds: Sequence[float],
               episodes: np.ndarray, draws: list[np.ndarray], level: float) -> list[float] | None:
    if not draws:
        return None
    values = []
    gt_ep, pred_ep = gt.episode.astype(str), pred.episode.astype(str)
    for draw in draws:
        gparts, pparts = [], []
        for copy, e in enumerate(episodes[draw]):
            offset = (copy + 1) * 1_000_000_000  # copies of an episode are distinct samples
            gi, pi = np.flatnonzero(gt_ep == e), np.flatnonzero(pred_ep == e)
            gparts.append((gi, offset))
            pparts.append((pi, offset))
        g = _resampled(gt, gparts)
        p = _resampled(pred, pparts)
        aps = [a for t in thresholds if (a := centre_ap(g, p, class_id, t)[0]) is not None]
        if aps:
            values.append(float(np.mean(aps)))
    if not values:
        return None
    a = (1.0 - level) / 2.0
    return [float(np.quantile(values, a)), float(np.quantile(values, 1.0 - a))]


def _resampled(objs: CentreObjects, parts: list[tuple[np.ndarray, int]]) -> CentreObjects:
    idx = np.concatenate([i for i, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    off = np.concatenate([np.full(len(i), o, dtype=np.int64) for i, o in parts]) if parts else np.zeros(0, np.int64)
    sel = objs.select(idx)
    return CentreObjects(sel.sample + off, sel.classes, sel.xy, sel.distance, sel.score, sel.episode)
