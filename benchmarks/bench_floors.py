"""Issue 27 item 6: the raised floors, each against a baseline measured in the same run.

- confusion: the columnar path (`ConfusionAccumulator.add_batch`) on 100 000 synthetic frames of ~10 objects
  >= 200 000 frames/s; baseline: one copy of the batch's arrays (the memory floor of touching the data once);
- BBSL: spec S4 compiled, >= 10 M boxes/s on 1 M boxes and <= 25 us per frame of 50 boxes; baseline: S4 hand-coded
  in numpy;
- posterior: 1000 Dirichlet draws of the reference matrices through one car-pedestrian chain (V = 5, class by
  distance, true environment ped, 5 specs) <= 1 s; baseline: Storm building and checking one draw's chain,
  extrapolated to 1000 draws.

Wall and CPU seconds (best of ``--repeat``) with the load average: the machine is shared.
Run: ``python benchmarks/bench_floors.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bbsl import BINDINGS, ROOT, hand_numpy_s4, random_boxes
from bench_bounds import REFERENCE
from bench_confusion import synthetic_batch

from perception_safety.bbsl import load_spec
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.config import ConfusionConfig


def load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def best(fn, repeat: int, number: int = 1) -> tuple[float, float]:
    """(wall, CPU) seconds per call, each the best of ``repeat`` runs of ``number`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        for _ in range(number):
            fn()
        wall.append((time.perf_counter() - w) / number)
        cpu.append((time.process_time() - c) / number)
    return min(wall), min(cpu)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def confusion(repeat: int) -> None:
    n = 100_000
    batch = synthetic_batch(n, 10)
    cfg = ConfusionConfig(classes={"ped": ["ped"], "obs": ["obs"]})  # as bench_confusion: 10 bins of 10 m
    arrays = (batch.det_boxes, batch.det_classes, batch.gt_boxes, batch.gt_classes, batch.gt_distances)
    l0 = load()
    w, c = best(lambda: ConfusionAccumulator(cfg).add_batch(batch), repeat)
    bw, _ = best(lambda: [a.copy() for a in arrays], repeat)
    print(f"confusion, {n} frames, {len(batch.gt_boxes)} objects, {len(batch.det_boxes)} detections (load {l0}):")
    print(f"  add_batch {w:.3f} s wall = {n / w:,.0f} frames/s; CPU {c:.3f} s = {n / c:,.0f} frames/CPU-s; "
          f"{w / bw:.0f}x one copy of the arrays ({bw * 1e3:.1f} ms)")
    print(f"  floor >= 200,000 frames/s: {verdict(n / w >= 2e5)} (wall), {verdict(n / c >= 2e5)} (CPU)")


def bbsl(repeat: int) -> None:
    spec = load_spec(ROOT / "config" / "specs" / "s4_four_cases.bbsl", BINDINGS)
    boxes = random_boxes(1_000_000)
    assert np.array_equal(spec.cases_for_boxes(boxes), hand_numpy_s4(boxes))
    l0 = load()
    w, c = best(lambda: spec.cases_for_boxes(boxes), repeat)
    hw, _ = best(lambda: hand_numpy_s4(boxes), repeat)
    b50 = random_boxes(50, seed=1)
    fw, fc = best(lambda: spec.cases_for_boxes(b50), repeat, 2000)
    hfw, _ = best(lambda: hand_numpy_s4(b50), repeat, 2000)
    print(f"BBSL S4 (load {l0}):")
    print(f"  1 M boxes: {w * 1e3:.1f} ms wall = {1e6 / w / 1e6:.1f} M boxes/s (CPU {1e6 / c / 1e6:.1f} M/s); "
          f"hand-written numpy {hw * 1e3:.1f} ms: {w / hw:.2f}x; floor >= 10 M boxes/s: {verdict(1e6 / w >= 1e7)}")
    print(f"  one frame of 50 boxes: {fw * 1e6:.1f} us wall (CPU {fc * 1e6:.1f} us); hand-written numpy "
          f"{hfw * 1e6:.1f} us: {fw / hfw:.2f}x; floor <= 25 us: {verdict(fw <= 25e-6)}")


def posterior(repeat: int, draws: int = 1000) -> None:
    from perception_safety.evaluation.confusion.io import load_matrices
    from perception_safety.verification.builder import ObservationModel, build_chain
    from perception_safety.verification.car_model import car_system, counted_observations
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.posterior import chain_skeleton, posterior_values
    from perception_safety.verification.specs import BUILTIN_SPECS, check
    from perception_safety.verification.uncertainty import posterior_draws

    dc = load_matrices(REFERENCE)
    cfg = VerificationConfig(max_speeds=[5], posterior={"draws": draws})
    specs = {name: BUILTIN_SPECS[name] for name in cfg.specs}
    counted = counted_observations(dc, "class_by_distance", cfg.true_envs["ped"])
    _, system = car_system(dc, cfg, "class_by_distance", "ped", 5)
    obs = counted.model()

    def run() -> None:
        probs = posterior_draws(counted, cfg, "class_by_distance", "ped")
        posterior_values(chain_skeleton(system, obs), probs, specs)

    l0 = load()
    w, c = best(run, repeat)
    probs = posterior_draws(counted, cfg, "class_by_distance", "ped")
    k = 5
    t = time.perf_counter()
    for d in range(k):
        chain = build_chain(system, ObservationModel(obs.outcomes, probs[d], obs.bin_edges))
        for f in specs.values():
            check(chain, f)
    storm = (time.perf_counter() - t) / k * draws
    n = build_chain(system, obs).n_states
    print(f"posterior, {draws} draws, one chain of {n} states, {len(specs)} specs (load {l0}):")
    print(f"  draws + batched solve {w:.3f} s wall (CPU {c:.3f} s); Storm per draw, extrapolated: {storm:.1f} s "
          f"({storm / w:.0f}x); floor <= 1 s: {verdict(w <= 1.0)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    confusion(args.repeat)
    bbsl(args.repeat)
    posterior(args.repeat)


if __name__ == "__main__":
    main()
