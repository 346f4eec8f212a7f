"""Benchmark: matching + binning + both confusion-matrix types on synthetic frames.

Run: ``.venv/bin/python benchmarks/bench_confusion.py [--frames 100000] [--frame-subset 20000]``

Measures (absolute times and ratios, all in this run):
- the vectorised columnar path (`FrameBatch` -> `ConfusionAccumulator.add_batch`) on ``--frames`` frames;
- on ``--frame-subset`` of them as `Frame` objects: a plain loop that only reads every box and
  class (the baseline), the full path from `Frame`s (flattening included), and a per-frame
  loop calling `match_boxes` then binning in Python (the straightforward implementation).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perception_safety.core import Box, Detection, Frame, GroundTruthObject, match_boxes
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ConfusionConfig

CLASSES = ("ped", "obs")


def synthetic_batch(n_frames: int, objects: int, seed: int = 0) -> FrameBatch:
    """~``objects`` ground-truth objects per frame on a 1280x720 image; 85 % detected with box jitter,
    5 % of those with the wrong class, plus ~1 ghost detection per frame."""
    rng = np.random.default_rng(seed)
    ng = rng.poisson(objects, n_frames)
    n = int(ng.sum())
    w = rng.uniform(10, 200, n)
    h = w * rng.uniform(0.8, 2.5, n)
    x0 = rng.uniform(0, 1280 - w)
    y0 = rng.uniform(0, 720 - np.minimum(h, 700))
    gt_boxes = np.stack([x0, y0, x0 + w, y0 + h], axis=1)
    gt_cls = rng.integers(0, 2, n)
    gt_dist = rng.uniform(0, 110, n)
    seen = rng.random(n) < 0.85
    jit = rng.normal(0, 0.05, (n, 4)) * np.stack([w, h, w, h], axis=1)
    det_from_gt = gt_boxes + jit
    det_from_gt[:, 2:] = np.maximum(det_from_gt[:, 2:], det_from_gt[:, :2] + 1)
    det_cls_gt = np.where(rng.random(n) < 0.05, 1 - gt_cls, gt_cls)
    ghosts = rng.poisson(1.0, n_frames)
    ng_total = int(ghosts.sum())
    gw = rng.uniform(10, 150, ng_total)
    gx = rng.uniform(0, 1130, ng_total)
    gy = rng.uniform(0, 570, ng_total)
    ghost_boxes = np.stack([gx, gy, gx + gw, gy + gw], axis=1)
    ghost_cls = rng.integers(0, 2, ng_total)
    # Assemble per-frame detection blocks: detected objects of the frame, then its ghosts.
    gt_frame = np.repeat(np.arange(n_frames), ng)
    ghost_frame = np.repeat(np.arange(n_frames), ghosts)
    frame_of = np.concatenate([gt_frame[seen], ghost_frame])
    order = np.argsort(frame_of, kind="stable")
    det_boxes = np.concatenate([det_from_gt[seen], ghost_boxes])[order]
    det_cls = np.concatenate([det_cls_gt[seen], ghost_cls])[order]
    nd = np.bincount(frame_of, minlength=n_frames)
    return FrameBatch(
        det_offsets=np.concatenate([[0], np.cumsum(nd)]),
        det_boxes=det_boxes,
        det_classes=det_cls,
        gt_offsets=np.concatenate([[0], np.cumsum(ng)]),
        gt_boxes=gt_boxes,
        gt_classes=gt_cls,
        gt_distances=gt_dist,
    )


def slice_batch(batch: FrameBatch, lo: int, hi: int) -> FrameBatch:
    d0, d1 = batch.det_offsets[lo], batch.det_offsets[hi]
    g0, g1 = batch.gt_offsets[lo], batch.gt_offsets[hi]
    return FrameBatch(
        batch.det_offsets[lo : hi + 1] - d0,
        batch.det_boxes[d0:d1],
        batch.det_classes[d0:d1],
        batch.gt_offsets[lo : hi + 1] - g0,
        batch.gt_boxes[g0:g1],
        batch.gt_classes[g0:g1],
        batch.gt_distances[g0:g1],
    )


def to_frames(batch: FrameBatch) -> list[Frame]:
    frames = []
    for f in range(batch.n_frames):
        d0, d1 = batch.det_offsets[f], batch.det_offsets[f + 1]
        g0, g1 = batch.gt_offsets[f], batch.gt_offsets[f + 1]
        dets = tuple(
            Detection(Box(*map(float, batch.det_boxes[i])), CLASSES[batch.det_classes[i]], 0.9) for i in range(d0, d1)
        )
        gts = tuple(
            GroundTruthObject(
                Box(*map(float, batch.gt_boxes[i])), CLASSES[batch.gt_classes[i]], float(batch.gt_distances[i])
            )
            for i in range(g0, g1)
        )
        frames.append(Frame(f, dets, gts))
    return frames


def read_only_loop(frames: list[Frame]) -> float:
    """Baseline: touch every box coordinate, class and distance once."""
    s = 0.0
    for fr in frames:
        for d in fr.detections:
            b = d.box
            s += b.x_min + b.y_min + b.x_max + b.y_max + len(d.class_id)
        for g in fr.ground_truth:
            b = g.box
            s += b.x_min + b.y_min + b.x_max + b.y_max + g.distance + len(g.class_id)
    return s


def per_frame_loop(frames: list[Frame], cfg: ConfusionConfig) -> np.ndarray:
    """The straightforward implementation: `match_boxes` per frame, binning in Python (class matrix only)."""
    edges = cfg.bin_edges
    k = len(edges) - 1
    names = (*cfg.class_names, cfg.empty_label)
    cm = np.zeros((k, len(names), len(names)), dtype=np.int64)
    for fr in frames:
        m = match_boxes(fr.detection_boxes(), fr.ground_truth_boxes(), cfg.iou_threshold)
        det_of = m.detection_for_gt()
        seen = [False] * k
        for gi, g in enumerate(fr.ground_truth):
            b = int(np.searchsorted(edges, g.distance, side="right")) - 1
            if 0 <= b < k:
                p = names.index(fr.detections[det_of[gi]].class_id) if det_of[gi] >= 0 else len(names) - 1
                cm[b, p, names.index(g.class_id)] += 1
                seen[b] = True
        for b in range(k):
            if not seen[b]:
                cm[b, -1, -1] += 1
    return cm


CPU: dict[str, float] = {}


def timed(fn, *args):
    """Wall time (reported; the machine is shared, so CPU time is recorded in CPU too) and result."""
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    CPU[getattr(fn, "__name__", "fn")] = time.process_time() - c
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--objects", type=float, default=10.0)
    ap.add_argument("--frame-subset", type=int, default=20_000)
    ap.add_argument("--chunk", type=int, default=4096)
    args = ap.parse_args()
    cfg = ConfusionConfig(classes={"ped": ["ped"], "obs": ["obs"]}, chunk_frames=args.chunk)

    batch = synthetic_batch(args.frames, args.objects)
    n_det, n_gt = len(batch.det_boxes), len(batch.gt_boxes)
    print(f"{args.frames} frames, {n_gt} ground-truth objects, {n_det} detections, chunk {args.chunk}")

    def columnar() -> ConfusionAccumulator:
        acc = ConfusionAccumulator(cfg)
        for lo in range(0, batch.n_frames, args.chunk):
            acc.add_batch(slice_batch(batch, lo, min(lo + args.chunk, batch.n_frames)))
        return acc

    t_col, acc = timed(columnar)
    fb = acc.counters["hungarian_fallback_frames"]
    print(
        f"columnar path (match + bin + both matrices): {t_col:.3f} s, {args.frames / t_col:,.0f} frames/s "
        f"({fb} frames = {100 * fb / args.frames:.2f} % needed the Hungarian fallback)"
    )
    print(f"  CPU time: {CPU['columnar']:.3f} s, {args.frames / CPU['columnar']:,.0f} frames per CPU-second")

    sub = min(args.frame_subset, args.frames)
    t_build, frames = timed(to_frames, slice_batch(batch, 0, sub))
    print(f"\nsubset of {sub} frames as Frame objects (built in {t_build:.2f} s)")
    t_read, _ = timed(read_only_loop, frames)
    t_frames, acc2 = timed(lambda: ConfusionAccumulator(cfg).add_frames(frames))
    t_loop, cm_loop = timed(per_frame_loop, frames, cfg)
    assert np.array_equal(cm_loop, acc2.class_cm), "per-frame loop and vectorised path disagree"
    rate = {name: sub / t for name, t in (("read", t_read), ("frames", t_frames), ("loop", t_loop))}
    print(f"baseline plain read loop:                 {t_read:.3f} s, {rate['read']:,.0f} frames/s")
    print(f"full path from Frame objects:             {t_frames:.3f} s, {rate['frames']:,.0f} frames/s")
    print(f"per-frame match_boxes loop (class only):  {t_loop:.3f} s, {rate['loop']:,.0f} frames/s")
    print("\nratios (frames/s over baseline read loop):")
    print(f"  columnar path      {args.frames / t_col / rate['read']:.2f}x")
    print(f"  from Frame objects {rate['frames'] / rate['read']:.2f}x")
    print(f"  per-frame loop     {rate['loop'] / rate['read']:.3f}x")
    print(f"speed-up of the columnar path over the per-frame loop: {args.frames / t_col / rate['loop']:.1f}x")
    print(f"speed-up from Frame objects over the per-frame loop:   {rate['frames'] / rate['loop']:.1f}x")


if __name__ == "__main__":
    main()
