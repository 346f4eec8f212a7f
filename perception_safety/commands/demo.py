"""``perception-safety demo``: the main job end to end on the embedded default (no external data or server)."""

from __future__ import annotations

import argparse
from pathlib import Path

from perception_safety.errors import PerceptionSafetyError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="builtin-simulator episode sweep with perturbations, then evaluate on its recordings",
        description="Runs a small sweep of the pedestrian-crossing scenario on the builtin simulator (simulated "
        "detector; three rollouts per episode: f, f + monitor, ground truth), records rosbag2 bags and episode "
        "logs, then runs `evaluate` on them and prints a one-screen summary. Finished episodes are reused.",
    )
    p.add_argument("--out", type=Path, default=Path("demo_out"), help="output directory (default: demo_out)")
    p.add_argument("--config", type=Path, default=None, help="demo config (default: config/demo.yaml)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from perception_safety.commands.evaluate import print_summary
    from perception_safety.pipeline.demo import default_demo_config, run_demo

    if args.jobs < 1:
        raise PerceptionSafetyError(f"--jobs must be at least 1, got {args.jobs}")
    config = args.config or default_demo_config()
    ev, _ = run_demo(config, args.out, args.jobs, Console(stderr=True))
    print_summary(ev, args.out / "evaluation", Console())
    return 0
