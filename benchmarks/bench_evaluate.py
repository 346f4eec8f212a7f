"""End-to-end `evaluate` throughput against reading and deserializing the same bag with rosbags alone.

A bag of N VGA (640x480 rgb8) frames with detections, ground truth and ego odometry is written once;
then, in the same run:
- baseline A: rosbags reads and deserializes every message of every topic (images included);
- baseline B: rosbags reads and deserializes the topics the analyses use (detections, ground truth, ego);
- map: `analyse_bag` (frames assembled + confusion matrices + PCD samples + BBSL test cases);
- full: the whole `evaluate` job (map + reduce + PCD fit + Storm verification + plots + HTML report).

Usage: python benchmarks/bench_evaluate.py [--frames 2000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pipeline"))

from conftest import SMALL_CONFIG, scene_frames
from rosbags.rosbag2 import Reader

from perception_safety.core import Frame
from perception_safety.io.bag import write_frames
from perception_safety.io.typestore import ros2_typestore
from perception_safety.pipeline.evaluate import analyse_bag
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.pipeline.run import run_evaluate


def make_bag(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    frames = scene_frames(n, 11)

    def with_images():
        for i, f in enumerate(frames):
            img = np.roll(base, i, axis=1)
            yield Frame(f.stamp_ns, f.detections, f.ground_truth, f.ego, img)

    write_frames(path, with_images())


def read_all(path: Path, topics: set[str] | None) -> int:
    store = ros2_typestore()
    n = 0
    with Reader(path) as r:
        conns = [c for c in r.connections if topics is None or c.topic in topics]
        for conn, _, raw in r.messages(connections=conns):
            store.deserialize_cdr(raw, conn.msgtype)
            n += 1
    return n


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_evaluate_"))
    try:
        bag = tmp / "bag"
        t = time.perf_counter()
        make_bag(bag, args.frames)
        size = sum(p.stat().st_size for p in bag.iterdir()) / 1e6
        print(f"wrote {args.frames} VGA frames ({size:.0f} MB) in {time.perf_counter() - t:.1f} s")
        cfg_file = tmp / "evaluate.yaml"
        cfg_file.write_text(SMALL_CONFIG)
        cfg, text = load_evaluate_config(cfg_file)
        cfg_json = cfg.model_dump_json()
        a = best(lambda: read_all(bag, None), args.repeat)
        b = best(lambda: read_all(bag, {"/detections", "/ground_truth", "/ego/odometry"}), args.repeat)
        m = best(lambda: analyse_bag(str(bag), cfg_json), args.repeat)
        out = tmp / "out"
        t = time.perf_counter()
        run_evaluate([bag], cfg, text, out)
        full = time.perf_counter() - t
        n = args.frames
        print(f"{'step':<58}{'s':>8}{'frames/s':>11}{'vs A':>8}{'vs B':>8}")
        for name, s in (
            ("A: rosbags read + deserialize, all topics (images too)", a),
            ("B: rosbags read + deserialize, detections/GT/ego", b),
            ("map: analyse_bag (assemble + confusion + PCD + BBSL)", m),
            ("full evaluate (map, reduce, fits, Storm, plots, HTML)", full),
        ):
            print(f"{name:<58}{s:8.3f}{n / s:11.0f}{s / a:8.2f}{s / b:8.2f}")
        print(f"analysis overhead of the map on top of read B: {100 * (m - b) / b:.0f} %")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
