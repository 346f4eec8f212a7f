"""Benchmark of the episode runner on the builtin backend (1280x720): stage shares, frames per second, sweep time.

Run: .venv/bin/python benchmarks/bench_episodes.py [--full] [--jobs N]

Baseline (same run): the bare backend step (kinematics + rendering + ground truth, no perturbation,
detector, monitor or recording). Then whole episodes (three lockstep rollouts, monitors, bags, logs)
with the time per stage, the cost of each perturbation per frame, and the estimated time of the
default sweep (every perturbation x level); ``--full`` runs that sweep for real.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from perception_safety.monitors.perturbations import PERTURBATIONS, perturb
from perception_safety.sim.builtin import BuiltinBackend
from perception_safety.sim.config import EpisodesConfig, PerturbationSpec, load_episodes_config
from perception_safety.sim.scenario import Control
from perception_safety.sim.sweep import EpisodeEngine, monitors_for, plan_episodes, run_sweep, write_episode

ROOT = Path(__file__).resolve().parents[1]


def bare_backend_fps(cfg: EpisodesConfig, frames: int = 100) -> float:
    b = BuiltinBackend(cfg.scenario, cfg.builtin.model_copy(update={"background_cache": 0}))
    b.reset(0)
    t0 = time.perf_counter()
    for _ in range(frames):
        b.step(Control.DRIVE)
    return frames / (time.perf_counter() - t0)


def perturbation_costs(cfg: EpisodesConfig) -> dict[tuple[str, int], float]:
    b = BuiltinBackend(cfg.scenario)
    obs = b.reset(0)
    for _ in range(70):
        obs = b.step(Control.DRIVE)
    out = {}
    for name, kind in PERTURBATIONS.items():
        for lv in range(1, kind.levels + 1):
            reps = 1 if name == "fog" else 3
            ts = []
            for r in range(reps):
                t0 = time.perf_counter()
                perturb(obs.image, name, lv, seed=r)
                ts.append(time.perf_counter() - t0)
            out[(name, lv)] = statistics.median(ts)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also run the whole default sweep")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    cfg_path = ROOT / "config" / "episodes.yaml"
    cfg = load_episodes_config(cfg_path)
    monitors = monitors_for(cfg, cfg_path)

    base = bare_backend_fps(cfg)
    print(f"baseline: bare builtin backend step (render + kinematics + ground truth, no cache): {base:.1f} frames/s")

    sample = (PerturbationSpec(name="smoke", levels=(3,)), PerturbationSpec(name="brightness", levels=(5,)),
              PerturbationSpec(name="coarse_dropout", levels=(3,)))
    ecfg = cfg.model_copy(update={"perturbations": sample, "include_clean": True})
    engine = EpisodeEngine(ecfg, "builtin", monitors)
    print("\nwhole episodes (3 lockstep rollouts, monitors, stop rule, detector, bags + episode log):")
    print(f"{'episode':32s} {'steps':>5s} {'rollout-frames':>14s} {'s':>6s} {'steps/s':>8s} {'vs bare':>8s}  "
          "render perturb detect monitor record")
    totals = {"render": 0.0, "perturb": 0.0, "detect": 0.0, "monitor": 0.0, "record": 0.0}
    all_frames = 0
    perturbed_frames = 0
    wall = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in plan_episodes(ecfg):
            t0 = time.perf_counter()
            rollouts, times = engine.run(spec)
            t1 = time.perf_counter()
            write_episode(Path(tmp), spec, rollouts, ecfg, "builtin")
            times.record += time.perf_counter() - t1
            dt = time.perf_counter() - t0
            wall += dt
            steps = max(len(r.steps) for r in rollouts.values())
            rframes = sum(len(r.steps) for r in rollouts.values())
            all_frames += steps
            d = times.as_dict()
            for k in totals:
                totals[k] += d[k]
            share = " ".join(f"{d[k] / dt * 100:6.1f}%" for k in totals)
            print(f"{spec.episode_id:32s} {steps:5d} {rframes:14d} {dt:6.2f} {steps / dt:8.1f} "
                  f"{steps / dt / base:7.2f}x  {share}")
            perturbed_frames += times.perturbed
    tot = sum(totals.values())
    print("stage shares over these episodes: " + ", ".join(f"{k} {v / tot * 100:.1f}%" for k, v in totals.items()))
    per_step_other = (wall - totals["perturb"]) / all_frames
    print(f"pipeline without perturbation: {per_step_other * 1000:.1f} ms per lockstep step "
          f"({1 / per_step_other:.1f} steps/s, {1 / per_step_other / base:.2f}x the bare backend)")

    costs = perturbation_costs(cfg)
    print("\nperturbation cost per 1280x720 frame (median), ms:")
    for name, kind in PERTURBATIONS.items():
        vals = " ".join(f"L{lv}={costs[(name, lv)] * 1000:.0f}" for lv in range(1, kind.levels + 1))
        print(f"  {name:16s} {vals}")
    grid = plan_episodes(cfg)
    steps_per_episode = all_frames / len(plan_episodes(ecfg))
    # distinct frames perturbed per lockstep step (rollouts share frames while their states coincide)
    share = perturbed_frames / all_frames
    print(f"\ndistinct frames perturbed per lockstep step: {share:.2f} (of 3 rollouts)")
    est = sum(steps_per_episode * (per_step_other + share * costs[(s.perturbation, s.level)]) for s in grid)
    est_nofog = sum(steps_per_episode * (per_step_other + share * costs[(s.perturbation, s.level)])
                    for s in grid if s.perturbation != "fog")
    print(f"estimated default sweep ({len(grid)} episodes x 3 rollouts, ~{steps_per_episode:.0f} steps each): "
          f"{est:.0f} s on one core, {est / args.jobs:.0f} s with --jobs {args.jobs}; "
          f"without fog ({sum(1 for s in grid if s.perturbation != 'fog')} episodes): {est_nofog:.0f} s / "
          f"{est_nofog / args.jobs:.0f} s")
    if args.full:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            rep = run_sweep(cfg, Path(tmp) / "out", "builtin", args.jobs, False, monitors)
            dt = time.perf_counter() - t0
        print(f"full default sweep: {rep.planned} episodes x 3 rollouts in {dt:.0f} s with --jobs {args.jobs} "
              f"({rep.times.frames} lockstep steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
