"""The demo job: a builtin-simulator episode sweep with perturbations, then `evaluate` on its recordings.

Everything runs on the embedded default (no external server or data): the pedestrian-crossing scenario
of the SG/RH/AC paper rendered by the builtin simulator, with its *simulated* detector (docs/episodes.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from perception_safety.io.paths import resolve_file
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.pipeline.run import Evaluation, progress_bar, run_evaluate
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import BAGS_DIR, LOGS_DIR, monitors_for, plan_episodes, run_sweep

DETECTOR_ROLLOUT = "perception"
"""Recordings of the rollout driven by the detector under test (f) are what the detector is evaluated on."""


def default_demo_config() -> Path:
    """``config/demo.yaml`` from the working directory, the package share directory or the checkout."""
    return resolve_file("config/demo.yaml", "--config")


def run_demo(config: Path, out: Path, jobs: int = 1, console: Console | None = None) -> tuple[Evaluation, dict]:
    """Sweep episodes into ``out/episodes``, evaluate into ``out/evaluation``; returns both results."""
    console = console or Console(stderr=True)
    ecfg = load_episodes_config(config)
    monitors = monitors_for(ecfg, config)
    episodes_dir = out / "episodes"
    t0 = time.perf_counter()
    with progress_bar(console) as bar:
        task = bar.add_task("episodes (3 rollouts each)", total=None)

        def progress(done: int, total: int, _name: str) -> None:
            bar.update(task, total=total, completed=done)

        sweep = run_sweep(ecfg, episodes_dir, "builtin", jobs, resume=True, monitors=monitors, progress=progress)
    console.print(f"episodes: {sweep.ran} run, {sweep.skipped} already done, {time.perf_counter() - t0:.1f} s")
    planned = [spec.episode_id for spec in plan_episodes(ecfg)]  # never other runs' leftovers in the folder
    bags = [episodes_dir / BAGS_DIR / e / DETECTOR_ROLLOUT for e in planned]
    logs = [episodes_dir / LOGS_DIR / f"{e}.jsonl" for e in planned]
    cfg, text = load_evaluate_config(config)
    ev = run_evaluate(bags, cfg, text, out / "evaluation", jobs, console, logs)
    return ev, sweep.results

