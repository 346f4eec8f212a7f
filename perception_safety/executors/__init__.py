"""Where independent tasks run: this process, local worker processes, or a Ray cluster (`run_tasks`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from perception_safety.executors.base import ExecutorError, OnDone, Outcome, call_captured, failure_reason
from perception_safety.executors.config import ExecutorConfig
from perception_safety.executors.lifetime import Terminated, die_with_parent, sigterm_interrupts


def run_tasks(
    fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]], cfg: ExecutorConfig, on_done: OnDone | None = None
) -> list[Outcome]:
    """``fn(*args)`` for each ``args`` on the executor ``cfg`` names; one `Outcome` per task, in input order.

    ``fn`` must be a module-level function (it is pickled by reference). A task whose function raises, or
    whose worker died more than ``cfg.max_retries`` times, has ``error`` set; the others still run.
    """
    if cfg.kind == "ray":
        from perception_safety.executors.ray_tasks import run_ray

        return run_ray(fn, tasks, cfg, on_done)
    from perception_safety.executors.local import run_local

    return run_local(fn, tasks, cfg.jobs, cfg.max_retries, on_done)


__all__ = [
    "ExecutorConfig",
    "ExecutorError",
    "OnDone",
    "Outcome",
    "Terminated",
    "call_captured",
    "die_with_parent",
    "failure_reason",
    "run_tasks",
    "sigterm_interrupts",
]
