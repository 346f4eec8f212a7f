"""``perception-safety episodes``: the pedestrian-crossing sweep on the builtin simulator or CARLA, SG/RH/AC."""

from __future__ import annotations

import argparse
import sys

from perception_safety.commands._executor_args import add_executor_arguments, executor_from_args


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "episodes",
        help="run scenario x perturbation x intensity episodes (f, f+monitor, f*) and compute SG/RH/AC",
        description="Runs the SG/RH/AC paper's pedestrian-crossing scenario for every perturbation and intensity "
        "of the config, three aligned rollouts each; writes episode logs, rosbag2 recordings and results.json.",
    )
    p.add_argument("--config", metavar="FILE", help="YAML with an `episodes` section (default: built-in defaults)")
    p.add_argument("--backend", choices=("builtin", "carla"), default="builtin", help="simulator (default: builtin)")
    p.add_argument("--out", metavar="DIR", required=True, help="output directory")
    add_executor_arguments(p, "episode")
    p.add_argument("--resume", action="store_true", help="keep finished episodes in DIR and run the rest")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.sim.config import load_episodes_config
    from perception_safety.sim.sweep import monitors_for, run_sweep

    cfg = load_episodes_config(args.config)
    monitors = monitors_for(cfg, args.config)
    executor = executor_from_args(args, cfg.executor)
    if args.backend == "carla" and executor.kind == "local" and executor.jobs > 1:
        print("note: --jobs is ignored with --backend carla (one simulator, one episode at a time)", file=sys.stderr)
    progress_cb = None
    bar = None
    if not args.no_progress:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        bar = Progress(
            TextColumn("episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
        )
        task = bar.add_task("", total=None)

        def progress_cb(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, description=name)

    if bar is not None:
        bar.start()
    try:
        report = run_sweep(
            cfg, args.out, args.backend, executor.jobs, args.resume, monitors, progress_cb, executor=executor
        )
    finally:
        if bar is not None:
            bar.stop()
    overall = report.results["metrics"]["overall"]
    print(f"episodes: {report.planned} planned, {report.ran} run, {report.skipped} already done "
          f"({report.seconds:.1f} s); results: {report.results_path}")
    for scheme in ("E1", "E2"):
        m = overall[scheme]["episodes"] if scheme == "E2" else overall[scheme]["frames"]
        print(f"{scheme}: SG={m['SG']:.3f} RH={m['RH']:.3f} AC={m['AC']:.3f} (hazard of f {m['hazard_f']:.3f})")
    return 0
