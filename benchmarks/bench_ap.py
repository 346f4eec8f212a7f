"""Benchmark of the detection-AP bootstrap (200 episode resamples x 10 IoU thresholds x pooled + distance bins).

Run: ``.venv/bin/python benchmarks/bench_ap.py [--detections 23200] [--copies 16]``. Synthetic AP records shaped
like the demo's (2 classes, 10 distance bins, 7 episodes, scores with ties, TP share falling with the score) are
timed through `ap_results` three ways in one run: the point estimate alone (``n_boot = 0``, the baseline the ratio
is against), the bootstrap as the package computes it (precision at the ends of runs of true positives, a run's
weight per distinct (run, episode) pair), and the bootstrap with the previous per-rank running sums (the code
before, kept here as the baseline). Both inputs: every detection distinct, and the same number of detections as
``copies`` copies of a smaller set (the input of issue 27 target 1: copies of one bag tie and sit side by side).
The two bootstraps must give the same table (asserted).

``--centre FRAMES``: the nuScenes-style centre-distance AP of 3D object lists (4 thresholds, pooled + 3 bins,
2 classes, 7 episodes): the point estimate, the bootstrap (outcomes matched once, each resample re-ranks the drawn
copies) and the bootstrap by definition (the drawn episodes' objects gathered and matched anew per resample, the code
before), same draws, same intervals asserted.
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import numpy as np

from perception_safety.evaluation.detection_ap import centre_distance as centre
from perception_safety.evaluation.detection_ap import precision
from perception_safety.evaluation.detection_ap.compute import ap_results
from perception_safety.evaluation.detection_ap.matching import IOU_THRESHOLDS
from perception_safety.evaluation.detection_ap.records import APRecords, _pack

EDGES = tuple(float(e) for e in range(0, 101, 10))


def records(n: int, copies: int, episodes: int = 7, seed: int = 0) -> APRecords:
    """``n`` detections (``n // copies`` distinct ones, each repeated ``copies`` times side by side)."""
    rng = np.random.default_rng(seed)
    m = max(1, n // copies)
    score = np.round(rng.random(m), 3)
    cls = (rng.random(m) < 0.9).astype(np.int64)
    episode = rng.integers(0, episodes, m)
    distance_bin = rng.integers(0, len(EDGES) - 1, m)
    hit = rng.random(m) < 0.25 + 0.7 * score
    iou = np.where(hit, rng.uniform(0.5, 1.0, m), rng.uniform(0.0, 0.5, m))
    reach = iou[None, :] >= IOU_THRESHOLDS[:, None]  # (T, m)
    ranges = len(EDGES)
    tp = np.zeros((ranges, len(IOU_THRESHOLDS), m), bool)
    fp = np.zeros_like(tp)
    tp[0], fp[0] = reach, ~reach
    tp[1 + distance_bin, :, np.arange(m)] = reach.T
    fp[1 + distance_bin, :, np.arange(m)] = ~reach.T
    rep = np.repeat  # copies sit side by side: identical score, flags and episode
    rec = APRecords(("ped", "obs"), EDGES)
    rec.episodes = [f"e{i}" for i in range(episodes)]
    rec.score, rec.cls = rep(score, copies).tolist(), rep(cls, copies).tolist()
    rec.episode = rep(episode, copies).tolist()
    rec.tp, rec.fp = rep(_pack(tp).T, copies, axis=0).tolist(), rep(_pack(fp).T, copies, axis=0).tolist()
    missed = rng.integers(0, 3, (ranges, 2, episodes))
    for r in range(ranges):
        for c in range(2):
            found = np.bincount(episode[(cls == c) & tp[r, 0]], minlength=episodes)
            for e in range(episodes):
                rec.n_gt[(r, c, e)] = int(copies * (found[e] + missed[r, c, e]))
    return rec


def _per_rank(tp, fp, w, unit, n, first_counts):
    """The previous code: running TP/FP sums at every rank where recall rises (`first_counts` recomputed there)."""
    rise = np.flatnonzero(tp)
    rows, k, s = len(w), len(precision.RECALL_POINTS), rise.size
    if s == 0:
        return np.zeros((rows, k))
    counts = np.cumsum(w.take(unit[rise], axis=1), axis=1, dtype=w.dtype)
    pos = np.flatnonzero(fp)
    if pos.size:
        sums = np.cumsum(np.concatenate([np.zeros((rows, 1), dtype=w.dtype), w.take(unit[pos], axis=1)], axis=1),
                         axis=1, dtype=w.dtype)  # fmt: skip
        fps = sums.take(np.searchsorted(pos, rise, side="right"), axis=1)
    else:
        fps = np.zeros_like(counts)
    seen = (counts + fps).astype(np.float64, copy=False)
    tps = counts.astype(np.float64, copy=False)
    prec = np.append((tps / (seen + precision.EPS)).ravel(), 0.0)
    offset = (np.arange(rows) * (np.max(n, initial=0.0) + tps[:, -1].max() + 2.0))[:, None]
    first = np.searchsorted((tps + offset).ravel(), (precision._first_counts(n) + offset).ravel(), side="left")
    first = first.reshape(rows, k) - (np.arange(rows) * s)[:, None]
    bounds = np.concatenate([first, np.full((rows, 1), s)], axis=1) + (np.arange(rows) * s)[:, None]
    best = np.maximum.reduceat(prec, bounds.ravel()).reshape(rows, k + 1)[:, :k]
    best[np.diff(bounds, axis=1) == 0] = 0.0
    best = np.flip(np.maximum.accumulate(np.flip(best, axis=1), axis=1), axis=1)
    best[first >= s] = 0.0
    return best


def cpu(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def centre_objects(frames: int, episodes: int = 7, seed: int = 0):
    """Ground truth (0-4 objects per frame, 2 classes) and detections (80 % found with 0.8 m noise, 20 % extra)."""
    rng = np.random.default_rng(seed)
    sample = np.repeat(np.arange(frames), rng.integers(0, 5, frames))
    names = np.array(["car", "ped"], dtype=object)
    cls, xy = rng.choice(names, sample.size), rng.uniform(-50, 50, (sample.size, 2))
    episode = np.array([f"e{s * episodes // frames}" for s in sample], dtype=object)
    gt = centre.CentreObjects(sample, cls, xy, np.hypot(*xy.T), np.ones(sample.size), episode)
    seen, extra = rng.random(sample.size) < 0.8, rng.integers(0, frames, sample.size // 5)
    p_sample = np.r_[sample[seen], extra]
    p_xy = np.r_[xy[seen] + rng.normal(0, 0.8, (seen.sum(), 2)), rng.uniform(-50, 50, (extra.size, 2))]
    p_ep = np.array([f"e{s * episodes // frames}" for s in p_sample], dtype=object)
    pred = centre.CentreObjects(p_sample, np.r_[cls[seen], rng.choice(names, extra.size)], p_xy, np.hypot(*p_xy.T),
                                np.round(rng.random(p_sample.size), 3), p_ep)  # fmt: skip
    return gt, pred


def _matched_anew(gt, pred, class_id, thresholds, draws, episodes):
    """The code before: per resample the drawn episodes' objects as distinct samples, matched anew."""
    def gather(objs, draw):
        ep = objs.episode.astype(str)
        idx = [np.flatnonzero(ep == e) for e in episodes[draw]]
        sel = objs.select(np.concatenate(idx))
        off = np.concatenate([np.full(len(i), (c + 1) * 10**9) for c, i in enumerate(idx)])
        return centre.CentreObjects(sel.sample + off, sel.classes, sel.xy, sel.distance, sel.score, sel.episode)

    values = []
    for draw in draws:
        g, p = gather(gt, draw), gather(pred, draw)
        aps = [centre.centre_ap(g, p, class_id, t)[0] for t in thresholds]
        if aps[0] is not None:
            values.append(float(np.mean(aps)))
    return values


def _greedy_loop(gt, pred, threshold):
    """The code before: the nuScenes greedy matching one prediction at a time."""
    tp = np.zeros(len(pred.sample), dtype=bool)
    if len(gt.sample) == 0 or len(pred.sample) == 0:
        return tp
    by_sample = {int(s): np.flatnonzero(gt.sample == s) for s in np.unique(gt.sample)}
    taken = np.zeros(len(gt.sample), dtype=bool)
    for p in np.lexsort((-np.arange(len(pred.sample)), -pred.score)):
        cand = by_sample.get(int(pred.sample[p]))
        free = cand[~taken[cand]] if cand is not None else cand
        if free is None or len(free) == 0:
            continue
        dist = np.hypot(*(gt.xy[free] - pred.xy[p]).T)
        j = int(np.argmin(dist))
        if dist[j] < threshold:
            taken[free[j]] = tp[p] = True
    return tp


def centre_line(frames: int) -> None:
    gt, pred = centre_objects(frames)
    edges = (0.0, 20.0, 40.0, 80.0)
    point, _ = cpu(lambda: centre.centre_ap_results(gt, pred, edges, n_boot=0), 1)
    boot, new = cpu(lambda: centre.centre_ap_results(gt, pred, edges, n_boot=200), 1)
    with mock.patch.object(centre, "centre_outcomes", _greedy_loop):
        old_point, _ = cpu(lambda: centre.centre_ap_results(gt, pred, edges, n_boot=0), 1)
        with mock.patch.object(centre, "_resampled_aps", _matched_anew):
            old_t, old = cpu(lambda: centre.centre_ap_results(gt, pred, edges, n_boot=200), 1)
    assert new == old, "the two bootstraps differ"
    print(f"centre-distance AP, {frames} frames ({len(gt.sample)} objects, {len(pred.sample)} detections), 200 "
          f"resamples of 7 episodes, CPU s: point {point:.2f} (before: matching one detection at a time "
          f"{old_point:.2f}), with the bootstrap {boot:.2f} = {boot / point:.1f}x the point (before: every resample "
          f"matched anew {old_t:.2f}, {old_t / boot:.1f}x); same table")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--detections", type=int, default=23_200, help="detections (the 16-copy demo input: 23 200)")
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="least CPU time of this many runs")
    parser.add_argument("--centre", type=int, metavar="FRAMES", default=0,
                        help="only the centre-distance AP of 3D object lists on this many frames (e.g. 500)")
    args = parser.parse_args()
    if args.centre:
        centre_line(args.centre)
        return
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"AP bootstrap, 200 resamples of 7 episodes, 2 classes x (pooled + 10 bins), load {load} (CPU s, least of "
          f"{args.repeat})")
    print(f"{'input':<32} {'point':>7} {'bootstrap':>10} {'x point':>8} {'per-rank (before)':>18} {'speed-up':>9}")
    for copies in (1, args.copies):
        rec = records(args.detections, copies)
        point, _ = cpu(lambda rec=rec: ap_results(rec, n_boot=0), args.repeat)
        boot, new = cpu(lambda rec=rec: ap_results(rec), args.repeat)
        with mock.patch.object(precision, "_at_recall_points", _per_rank):
            old_t, old = cpu(lambda rec=rec: ap_results(rec), args.repeat)
        assert new == old, "the two bootstraps differ"
        kind = "distinct" if copies == 1 else f"{copies} copies of {args.detections // copies}"
        what = f"{args.detections} dets, {kind}"
        print(f"{what:<32} {point:>7.3f} {boot:>10.3f} {boot / point:>7.1f}x {old_t:>18.3f} {old_t / boot:>8.1f}x")


if __name__ == "__main__":
    main()
