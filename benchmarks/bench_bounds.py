"""Benchmark: interval-chain bounds and the Dirichlet posterior of P(φ) (issue 13, items 2-3).

1. Interval chain of ~10^5 states (car–pedestrian, V = 57): numpy build + Storm IDTMC + MINIMIZE/MAXIMIZE
   bounded until for ``stop_at_k`` and φ, against the point chain's build + check of the same two specs,
   measured in the same run (target: ratio ≤ 3).
2. Posterior: ``--draws`` whole-matrix draws on the reference sweep geometry (V = 1..5, 4 variants, 3 true
   environments, 5 specs) with batched solves; baseline: the same draws checked with Storm one chain per
   draw (timed on a few draws, extrapolated). Reports draws/s (target: 1000 draws ≤ 10 s).

Run: ``.venv/bin/python benchmarks/bench_bounds.py [--quick] [--repeat N] [--draws D]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from bench_verification import LABELS, synthetic_matrices  # the same synthetic detector (script directory)

from perception_safety.evaluation.confusion.io import load_matrices
from perception_safety.verification.bounds import spec_bounds
from perception_safety.verification.builder import ObservationModel, build_chain
from perception_safety.verification.car_model import car_system, counted_observations
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.interval_chain import build_interval_chain
from perception_safety.verification.posterior import chain_skeleton, posterior_values
from perception_safety.verification.specs import BUILTIN_SPECS, check
from perception_safety.verification.uncertainty import posterior_draws

SPECS = {"stop_at_k": BUILTIN_SPECS["stop_at_k"], "phi": BUILTIN_SPECS["phi"]}
REFERENCE = Path(__file__).resolve().parents[1] / "reference" / \
    "dist_confusion_matrices_nuscenes_yolov3.json"


def synthetic_counts(road_cells: int, per_column: int = 400):
    """bench_verification's synthetic matrices as counts: ``per_column`` samples per true label and bin."""
    p, edges = synthetic_matrices(road_cells)
    return np.round(p * per_column), edges


def interval_vs_point(V: int) -> tuple[int, int, dict[str, float]]:
    g = Geometry.reference(V)
    counts, edges = synthetic_counts(g.road_cells)
    counted = CountedObservations.for_class(counts, LABELS, ["ped"], edges)
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, V + 1))
    obs = counted.model(0.05)
    t0 = time.perf_counter()
    chain = build_chain(system, obs)
    chain.storm_model()
    t1 = time.perf_counter()
    point = {name: check(chain, f) for name, f in SPECS.items()}
    t2 = time.perf_counter()
    ichain = build_interval_chain(system, obs)
    t3 = time.perf_counter()
    bounds = spec_bounds(ichain, SPECS)
    t4 = time.perf_counter()
    for name, b in bounds.items():
        assert not isinstance(b, Exception) and b.exact, name
        s = chain.initial_states
        assert np.all(b.lower[s] <= point[name][s] + 1e-12) and np.all(point[name][s] <= b.upper[s] + 1e-12)
    return chain.n_states, ichain.n_transitions, {
        "point build": t1 - t0, "point check": t2 - t1, "interval build": t3 - t2, "bounds": t4 - t3,
    }


def posterior_sweep(draws: int) -> tuple[float, int, float]:
    """All (variant, env, V <= 5): sample + skeleton + batched solves; returns seconds, chains, Storm s/draw."""
    dc = load_matrices(REFERENCE)
    cfg = VerificationConfig(max_speeds=[1, 2, 3, 4, 5], posterior={"draws": draws})
    specs = {name: BUILTIN_SPECS[name] for name in cfg.specs}
    t0 = time.perf_counter()
    n_chains = 0
    for variant in cfg.variants:
        for env_name, env in cfg.true_envs.items():
            counted = counted_observations(dc, variant, env)
            probs = posterior_draws(counted, cfg, variant, env_name)
            obs = counted.model()
            for V in cfg.max_speeds:
                _, system = car_system(dc, cfg, variant, env_name, V)
                try:
                    build_chain(system, obs)
                except Exception:
                    continue
                posterior_values(chain_skeleton(system, obs), probs, specs)
                n_chains += 1
    seconds = time.perf_counter() - t0
    # baseline: Storm per draw on the largest chain of one (variant, env), a few draws, extrapolated
    counted = counted_observations(dc, "class_by_distance", cfg.true_envs["ped"])
    probs = posterior_draws(counted, cfg, "class_by_distance", "ped")
    _, system = car_system(dc, cfg, "class_by_distance", "ped", 5)
    obs = counted.model()
    t0 = time.perf_counter()
    k = 5
    for d in range(k):
        chain = build_chain(system, ObservationModel(obs.outcomes, probs[d], obs.bin_edges))
        for f in specs.values():
            check(chain, f)
    storm_per_draw_chain = (time.perf_counter() - t0) / k
    return seconds, n_chains, storm_per_draw_chain


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="~10^4 states instead of ~10^5")
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs per phase (shared machine)")
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    interval_vs_point(5)  # warm-up: imports, Storm's first-call setup
    V = 18 if args.quick else 57
    runs = [interval_vs_point(V) for _ in range(max(1, args.repeat))]
    n, nt, _ = runs[0]
    t = {key: min(r[2][key] for r in runs) for key in runs[0][2]}
    point, interval = t["point build"] + t["point check"], t["interval build"] + t["bounds"]
    print(f"interval chain, V = {V}: {n} states, {nt} interval transitions; specs stop_at_k and phi")
    print("  " + "  ".join(f"{k} {v:.3f} s" for k, v in t.items()))
    print(f"  point build + check {point:.3f} s | interval build + both bounds {interval:.3f} s | "
          f"ratio {interval / point:.2f}x (target <= 3x)")
    seconds, n_chains, storm = posterior_sweep(args.draws)
    print(f"posterior, {args.draws} draws x {n_chains} chains (V <= 5, 4 variants, 3 envs, 5 specs): "
          f"{seconds:.2f} s = {args.draws / seconds:.0f} draws/s (target: 1000 draws <= 10 s)")
    print(f"  Storm one chain per draw (measured on 5 draws of the V = 5 chain, 5 specs): {storm * 1e3:.1f} ms per "
          f"draw and chain -> {storm * args.draws * n_chains:.0f} s extrapolated, "
          f"{storm * args.draws * n_chains / seconds:.0f}x the batched solve")


if __name__ == "__main__":
    main()
