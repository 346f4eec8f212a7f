"""``perception-safety demo``: the end-to-end job on the embedded default (no external data needed)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject, match_frame
from perception_safety.io.bag import BagReadReport, read_frames, write_frames


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="run the end-to-end demo on the embedded default")
    p.add_argument("--out", type=Path, default=Path("demo_out"), help="output directory (default: demo_out)")
    p.add_argument("--frames", type=int, default=200, help="frames to record (default: 200)")
    p.set_defaults(func=run)


def _synthetic_frames(n: int, seed: int = 0) -> list[Frame]:
    """A pedestrian approaching at 8 m/s with a noisy detector (a stand-in until the simulator lands)."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        distance = max(2.0, 60.0 - 0.4 * i)
        h = 720.0 * 1.7 / distance
        box = Box(640 - h / 4, 400 - h / 2, 640 + h / 4, 400 + h / 2)
        gt = GroundTruthObject.at_position(box, "pedestrian", (distance, 0.0, 0.0), "ped0")
        dets = []
        if rng.uniform() < min(1.0, 1.2 - distance / 60):
            jitter = rng.normal(0, 2, 4)
            b = np.sort(np.array(box.as_tuple()).reshape(2, 2) + jitter.reshape(2, 2), axis=0).reshape(-1)
            dets.append(Detection(Box(b[0], b[1], b[2], b[3]), "pedestrian", float(rng.uniform(0.5, 1))))
        image = rng.integers(0, 256, (72, 128, 3), dtype=np.uint8)
        frames.append(Frame(i * 50_000_000, tuple(dets), (gt,), EgoState(0.4 * i, 0, 0, 8.0), image))
    return frames


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    frames = _synthetic_frames(args.frames)
    for storage in ("mcap", "sqlite3"):
        bag = out / f"demo_{storage}"
        if bag.exists():
            import shutil

            shutil.rmtree(bag)
        t0 = time.perf_counter()
        write_frames(bag, frames, storage=storage)
        t1 = time.perf_counter()
        report = BagReadReport()
        back = list(read_frames(bag, report=report))
        t2 = time.perf_counter()
        matched = sum(len(match_frame(f, 0.5).gt_indices) for f in back)
        total = sum(len(f.ground_truth) for f in back)
        print(
            f"{bag}: wrote {len(frames)} frames in {t1 - t0:.2f} s, read {len(back)} in {t2 - t1:.2f} s; "
            f"detector recall at IoU 0.5: {matched}/{total} = {matched / max(total, 1):.3f}"
        )
        for line in report.summary_lines()[1:]:
            print("  " + line)
    return 0
