"""Benchmark of the detection-AP bootstrap (200 episode resamples x 10 IoU thresholds x pooled + distance bins).

Run: ``.venv/bin/python benchmarks/bench_ap.py [--detections 23200] [--copies 16]``. Synthetic AP records shaped
like the demo's (2 classes, 10 distance bins, 7 episodes, scores with ties, TP share falling with the score) are
timed through `ap_results` three ways in one run: the point estimate alone (``n_boot = 0``, the baseline the ratio
is against), the bootstrap as the package computes it (precision at the ends of runs of true positives, a run's
weight per distinct (run, episode) pair), and the bootstrap with the previous per-rank running sums (the code
before, kept here as the baseline). Both inputs: every detection distinct, and the same number of detections as
``copies`` copies of a smaller set (the input of issue 27 target 1: copies of one bag tie and sit side by side).
The two bootstraps must give the same table (asserted).
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import numpy as np

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--detections", type=int, default=23_200, help="detections (the 16-copy demo input: 23 200)")
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="least CPU time of this many runs")
    args = parser.parse_args()
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
