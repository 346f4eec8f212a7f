"""Benchmark of BBSL evaluation: S4 vectorised over 1M boxes and per frame over 50 boxes.

Baseline (same run): the plain-Python tree-walking interpreter of the same spec
(`perception_safety.bbsl.interpreter`), one box at a time; and, for reference, S4
written by hand in numpy. Run: ``.venv/bin/python benchmarks/bench_bbsl.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from perception_safety.bbsl import load_spec
from perception_safety.bbsl.config import BBSLConfig
from perception_safety.bbsl.interpreter import Interpreter
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.bbsl_testing import format_report, run_oracle

ROOT = Path(__file__).resolve().parents[1]
BINDINGS = {
    "vehicleExists": "subject_exists",
    "vehicle": "subject",
    "stoppingDistance": [275, 375],
    "directionAreaDistance": [420, 821],
}


def random_boxes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy0 = rng.uniform(0, [1242, 375], (n, 2))
    xy1 = np.minimum(xy0 + rng.uniform(1, 300, (n, 2)), [1242, 375])
    return np.column_stack([xy0, xy1])


def best(fn, repeat: int, number: int = 1) -> float:
    """Best wall time of ``number`` calls, over ``repeat`` runs, per call (s)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return min(times)


def hand_numpy_s4(b: np.ndarray) -> np.ndarray:
    x = (b[:, 2] >= 420.0) & (b[:, 0] <= 821.0)
    y = (b[:, 3] >= 275.0) & (b[:, 1] <= 375.0)
    return np.stack([x & y, x & ~y, ~x & y, ~x & ~y], axis=1)


def python_s4(b) -> list[bool]:
    """S4 hand-written per box in plain Python (how the paper implemented its specs, Section 5.1)."""
    x = b[2] >= 420.0 and b[0] <= 821.0
    y = b[3] >= 275.0 and b[1] <= 375.0
    return [x and y, x and not y, not x and y, not x and not y]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    rep = 3 if args.quick else 7
    spec = load_spec(ROOT / "config" / "specs" / "s4_four_cases.bbsl", BINDINGS)
    interp = Interpreter(spec.checked.spec, spec.bindings, spec.image_size)

    n = 1_000_000
    boxes = random_boxes(n)
    got = spec.cases_for_boxes(boxes)
    assert np.array_equal(got, hand_numpy_s4(boxes)), "compiled S4 disagrees with hand-written numpy"
    t_vec = best(lambda: spec.cases_for_boxes(boxes), rep)
    t_hand = best(lambda: hand_numpy_s4(boxes), rep)
    sub = boxes[:20_000]
    t_py = best(lambda: [interp.run(b) for b in sub], max(1, rep // 3)) / len(sub)
    sub_list = sub.tolist()
    t_hand_py = best(lambda: [python_s4(b) for b in sub_list], rep) / len(sub)
    for i in range(0, len(sub), 997):
        assert interp.run(sub[i])[1] == got[i].tolist()
    print(f"S4 vectorised, {n:,} boxes")
    print(f"  compiled numpy        {t_vec * 1e3:9.2f} ms   {n / t_vec / 1e6:8.1f} M boxes/s")
    print(f"  hand-written numpy    {t_hand * 1e3:9.2f} ms   {n / t_hand / 1e6:8.1f} M boxes/s")
    print(f"  plain-Python interp.  {t_py * n * 1e3:9.0f} ms   {1 / t_py / 1e6:8.3f} M boxes/s  (from 20,000 boxes)")
    print(f"  hand-written Python   {t_hand_py * n * 1e3:9.0f} ms   {1 / t_hand_py / 1e6:8.3f} M boxes/s  (per box)")
    print(f"  ratio interp./compiled {t_py * n / t_vec:8.0f}x   hand-Python/compiled {t_hand_py * n / t_vec:6.0f}x")
    print(f"  compiled/hand-numpy {t_vec / t_hand:5.2f}x")

    boxes50 = random_boxes(50, seed=1)
    frame = Frame(0, detections=tuple(Detection(Box(*b), "car") for b in boxes50))
    t_frame = best(lambda: spec.cases_for_boxes(boxes50), rep, 2000)
    t_eval_frame = best(lambda: spec.evaluate_frame(frame, classes=("car",)), rep, 500)
    c = spec.compiled
    ex = np.asarray(True)
    t_gen50 = best(lambda: c.fn(boxes50[:, 0], boxes50[:, 1], boxes50[:, 2], boxes50[:, 3], ex, ()), rep, 2000)
    t_py50 = best(lambda: [interp.run(b) for b in boxes50], rep, 20)
    list50 = boxes50.tolist()
    t_hand50 = best(lambda: [python_s4(b) for b in list50], rep, 500)
    print("S4 per frame, 50 boxes")
    print(f"  cases_for_boxes       {t_frame * 1e6:9.1f} us")
    print(f"  generated code only   {t_gen50 * 1e6:9.1f} us  (column-wise path, no truth table)")
    print(f"  evaluate_frame(Frame) {t_eval_frame * 1e6:9.1f} us  (incl. building the box array from the Frame)")
    print(f"  plain-Python interp.  {t_py50 * 1e6:9.1f} us")
    print(f"  hand-written Python   {t_hand50 * 1e6:9.1f} us  (S4 coded by hand, boxes already a Python list)")
    print(f"  ratio interp./cases_for_boxes {t_py50 / t_frame:6.1f}x")

    # the test oracle (Definitions 12-13) over a synthetic KITTI-sized scene set
    frames = synthetic_frames(349, seed=2)  # as many images as Td1 (Table 1)
    t = time.perf_counter()
    report = run_oracle(spec, frames, BBSLConfig())
    t_oracle = time.perf_counter() - t
    n_cases = len(report.test_cases)
    print(f"Test oracle, S4, {len(frames)} synthetic frames, {n_cases} test cases")
    print(f"  run_oracle            {t_oracle * 1e3:9.1f} ms   {n_cases / t_oracle:9.0f} test cases/s")
    print("\n".join("  " + line for line in format_report(report).splitlines()[1:4]))


def synthetic_frames(n_frames: int, seed: int) -> list[Frame]:
    """About 8 cars per frame; detections = boxes with pixel noise, 10 % missed, a few ghosts."""
    rng = np.random.default_rng(seed)
    frames = []
    for f in range(n_frames):
        gts, dets = [], []
        for _ in range(int(rng.integers(4, 13))):
            h = float(rng.uniform(15, 150))
            w = h * float(rng.uniform(1.0, 2.0))
            x0 = float(rng.uniform(0, 1242 - w))
            y1 = float(rng.uniform(150 + h / 3, 375))
            box = Box(x0, max(0.0, y1 - h), x0 + w, y1)
            gts.append(GroundTruthObject(box, "car", 10.0))
            if rng.random() < 0.9:
                jit = rng.normal(0, 0.08 * h, 4)
                b = np.clip([box.x_min + jit[0], box.y_min + jit[1], box.x_max + jit[2], box.y_max + jit[3]], 0, None)
                b = [min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])]
                dets.append(Detection(Box(*(float(v) for v in b)), "car", 0.9))
        frames.append(Frame(f, detections=tuple(dets), ground_truth=tuple(gts), frame_id=str(f)))
    return frames


if __name__ == "__main__":
    main()
