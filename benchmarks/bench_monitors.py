"""Benchmark: contrast monitor, plausibility monitor, perturbations.

Run: ``.venv/bin/python benchmarks/bench_monitors.py [--repeats 30]``

Measures (absolute times and ratios, all in this run; the best of ``--repeats`` and the median):
- contrast monitor (row-variance statistic) at 640x480, 1280x720, 1920x1080, against one ``np.copy``
  of the same frame (the memory-bandwidth floor), against its own luma conversion alone (``luma8``, the pass the
  exact statistic cannot skip) and against the direct ``np.var(luma, axis=1).mean()``; at 1080p the floor (the luma
  conversion alone ÷ the copy), the conversion with and without IPP / OpenCV's SIMD dispatch, and cold frames
  (each call on another of 16 distinct frames, read from memory as in a node);
- plausibility monitor on frames with 50 watched boxes, against one ``match_boxes`` call on 50x50 boxes
  (the Hungarian association it performs once per frame);
- every perturbation at its middle level on a 1280x720 frame, against one ``np.copy``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import cv2
import numpy as np

from perception_safety.core import Box, Detection, Frame, match_boxes
from perception_safety.monitors.config import PlausibilityConfig
from perception_safety.monitors.contrast import ContrastMonitor, luma8
from perception_safety.monitors.perturbations import PERTURBATIONS, perturb
from perception_safety.monitors.plausibility import PlausibilityMonitor


def timeit(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best, median) seconds of ``repeats`` calls after one warm-up call."""
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts)


def textured(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def bench_contrast(repeats: int) -> None:
    print("## contrast monitor (row-variance statistic), per frame, warm (the frame in cache)")
    print(f"{'size':>10} {'copy ms':>9} {'luma ms':>9} {'monitor ms':>11} {'x copy':>7} {'x luma':>7} "
          f"{'np.var ms':>10} {'x copy':>7}  (best; medians after)")
    mon = ContrastMonitor()
    for w, h in ((640, 480), (1280, 720), (1920, 1080)):
        img = textured(h, w)
        frame = Frame(0, image=img)
        c_best, c_med = timeit(lambda img=img: np.copy(img), repeats)
        l_best, l_med = timeit(lambda img=img: luma8(img), repeats)
        m_best, m_med = timeit(lambda frame=frame: mon.update(frame), repeats)
        v_best, _ = timeit(lambda img=img: np.var(luma8(img).astype(np.float64), axis=1).mean(), max(3, repeats // 5))
        print(
            f"{w}x{h:<5} {c_best * 1e3:>9.3f} {l_best * 1e3:>9.3f} {m_best * 1e3:>11.3f} {m_best / c_best:>7.2f} "
            f"{m_best / l_best:>7.2f} {v_best * 1e3:>10.3f} {v_best / c_best:>7.2f}   median: copy {c_med * 1e3:.3f}, "
            f"luma {l_med * 1e3:.3f}, monitor {m_med * 1e3:.3f} ({m_med / c_med:.2f}x copy, {m_med / l_med:.2f}x luma)"
        )
    print(f"floor at 1920x1080: the luma conversion alone is {l_best / c_best:.2f}x the copy (best), "
          f"{l_med / c_med:.2f}x (median); the statistic needs every pixel's rounded luma (DESIGN.md)")
    bench_luma_paths(img, repeats)
    bench_contrast_cold(repeats)


def bench_luma_paths(img: np.ndarray, repeats: int) -> None:
    """The luma conversion's own paths on one frame: as used (IPP and SIMD dispatch on), without IPP, without
    OpenCV's optimised code; each checked to give the same luma."""
    ref = luma8(img)
    rows = []
    for name, ipp, optimized in (("as used", True, True), ("IPP off", False, True), ("SIMD/IPP off", True, False)):
        cv2.ipp.setUseIPP(ipp)
        cv2.setUseOptimized(optimized)
        try:
            assert np.array_equal(luma8(img), ref), name
            rows.append(f"{name} {timeit(lambda: luma8(img), repeats)[0] * 1e3:.3f} ms")
        finally:
            cv2.ipp.setUseIPP(True)
            cv2.setUseOptimized(True)
    print(f"luma conversion paths, {img.shape[1]}x{img.shape[0]} (best): " + ", ".join(rows))


def bench_contrast_cold(repeats: int, n_frames: int = 16) -> None:
    """1080p frames taken in turn from ``n_frames`` distinct ones (100 MB, beyond the last-level cache): each call
    reads its frame from memory, as a node does with a frame just received."""
    frames = [textured(1080, 1920, seed) for seed in range(n_frames)]
    mon = ContrastMonitor()
    print(f"\n## contrast monitor, cold: 1920x1080, each call on the next of {n_frames} distinct frames "
          f"({n_frames * frames[0].nbytes / 1e6:.0f} MB)")
    times: dict[str, tuple[float, float]] = {}
    for name, fn in (("copy", np.copy), ("luma", luma8), ("monitor", lambda f: mon.update(Frame(0, image=f)))):
        it = iter(frames * (repeats // n_frames + 2))
        times[name] = timeit(lambda fn=fn, it=it: fn(next(it)), repeats)
    (c_best, c_med), (l_best, l_med), (m_best, m_med) = times["copy"], times["luma"], times["monitor"]
    print(f"copy {c_best * 1e3:.3f} ms, luma {l_best * 1e3:.3f} ms, monitor {m_best * 1e3:.3f} ms: "
          f"{m_best / c_best:.2f}x copy, {m_best / l_best:.2f}x luma (best); medians {c_med * 1e3:.3f} / "
          f"{l_med * 1e3:.3f} / {m_med * 1e3:.3f} ms: {m_med / c_med:.2f}x copy, {m_med / l_med:.2f}x luma")


def bench_plausibility(repeats: int, n_boxes: int = 50, n_frames: int = 200) -> None:
    print(f"\n## plausibility monitor, {n_boxes} watched boxes per frame, {n_frames}-frame sequence")
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1200, n_boxes)
    y = rng.uniform(300, 620, n_boxes)
    vx = rng.normal(0, 3, n_boxes)
    frames = []
    for k in range(n_frames):
        xs = x + vx * k + rng.normal(0, 0.5, n_boxes)
        dets = tuple(Detection(Box(a, b, a + 40, b + 100), "person", 0.9) for a, b in zip(xs, y, strict=True))
        frames.append(Frame(k, detections=dets))
    mon = PlausibilityMonitor(PlausibilityConfig(image_size=(1280, 720)))

    def run_sequence() -> None:
        mon.reset()
        for f in frames:
            mon.update(f)

    s_best, s_med = timeit(run_sequence, max(3, repeats // 10))
    boxes = frames[1].detection_boxes()
    prev = frames[0].detection_boxes()
    cls = ["person"] * n_boxes
    m_best, _ = timeit(lambda: match_boxes(boxes, prev, 0.3, cls, cls, class_aware=True), repeats)
    per = s_best / n_frames
    print(
        f"per frame: best {per * 1e3:.3f} ms (median {s_med / n_frames * 1e3:.3f} ms); "
        f"one match_boxes 50x50: {m_best * 1e3:.3f} ms; ratio {per / m_best:.2f}x"
    )


def bench_perturbations(repeats: int) -> None:
    print("\n## perturbations at their middle level, 1280x720 frame")
    img = textured(720, 1280)
    c_best, _ = timeit(lambda: np.copy(img), repeats)
    print(f"np.copy: {c_best * 1e3:.3f} ms")
    for name, kind in PERTURBATIONS.items():
        level = (kind.levels + 1) // 2
        reps = 2 if name == "fog" else max(3, repeats // 5)
        best, _ = timeit(lambda name=name, level=level: perturb(img, name, level, seed=1), reps)
        print(f"{name:<16} level {level}: {best * 1e3:>9.2f} ms  ({best / c_best:>8.1f}x copy)  [{kind.source}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--skip-perturbations", action="store_true")
    ap.add_argument("--opencv-threads", type=int, default=1,
                    help="cv2.setNumThreads (default 1, the safety_monitor node's; -1 = OpenCV's default pool)")
    args = ap.parse_args()
    cv2.setNumThreads(args.opencv_threads)
    print(f"OpenCV threads {cv2.getNumThreads()}; load average 1/5/15 min: "
          + " / ".join(f"{x:.2f}" for x in os.getloadavg()))
    bench_contrast(args.repeats)
    bench_plausibility(args.repeats)
    if not args.skip_perturbations:
        bench_perturbations(args.repeats)


if __name__ == "__main__":
    main()
