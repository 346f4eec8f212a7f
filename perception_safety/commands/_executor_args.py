"""``--executor``, ``--jobs``, ``--ray-address``: shared by the commands that fan out tasks (evaluate, episodes)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from perception_safety.errors import PerceptionSafetyError

if TYPE_CHECKING:  # pydantic loads when a command runs, not for --help
    from perception_safety.executors.config import ExecutorConfig


def add_executor_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """Add the three flags; each overrides the config's ``executor`` value when given."""
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default=None,
        help=f"where each {unit}'s task runs: local processes or Ray tasks (default: config, else local)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="local: worker processes; ray without --ray-address: CPUs of the Ray instance started here (default 1)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="auto|HOST:PORT",
        help="join a running Ray cluster ('auto': the one started on this machine with `ray start --head`); "
        "implies --executor ray. Inputs and outputs must be on a filesystem every worker reads (shared)",
    )


def executor_from_args(args: argparse.Namespace, base: ExecutorConfig) -> ExecutorConfig:
    """The config's executor with the flags given on the command line applied."""
    if args.jobs is not None and args.jobs < 1:
        raise PerceptionSafetyError(f"--jobs must be at least 1, got {args.jobs}")
    update: dict[str, object] = {}
    if args.executor is not None:
        update["kind"] = args.executor
    if args.jobs is not None:
        update["jobs"] = args.jobs
    if args.ray_address is not None:
        update["ray_address"] = args.ray_address
        if args.executor is None:
            update["kind"] = "ray"
        elif args.executor != "ray":
            raise PerceptionSafetyError("--ray-address needs --executor ray")
    return base.model_copy(update=update)
