"""Local executor: the tasks in this process (``jobs=1``) or in ``jobs`` spawned worker processes.

Worker processes die with the parent (`lifetime.die_with_parent`). When a worker dies mid-task (killed, out
of memory, a crash in native code) the pool breaks and every unfinished task fails; those tasks are then
re-run one at a time, each in a fresh single-worker pool, so a task that kills its worker is retried
``max_retries`` times and reported, without costing the other tasks their retries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from perception_safety.executors.base import OnDone, Outcome, call_captured
from perception_safety.executors.lifetime import die_with_parent, sigterm_interrupts


def runs_in_process(jobs: int, n_tasks: int) -> bool:
    """Whether `run_local` runs the tasks one after the other in this process (no worker pool)."""
    return jobs <= 1 or n_tasks <= 1


def run_local(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    jobs: int = 1,
    max_retries: int = 3,
    on_done: OnDone | None = None,
) -> list[Outcome]:
    """Run ``fn(*args)`` for every ``args`` of ``tasks``; outcomes in input order (``on_done`` as they end)."""
    outcomes: list[Outcome | None] = [None] * len(tasks)

    def finish(out: Outcome) -> None:
        outcomes[out.index] = out
        if on_done is not None:
            on_done(out)

    with sigterm_interrupts():
        if runs_in_process(jobs, len(tasks)):
            for i, args in enumerate(tasks):
                ok, value = call_captured(fn, args)
                finish(Outcome(i, value if ok else None, None if ok else value))
        else:
            broken = _run_pool(fn, tasks, list(range(len(tasks))), min(jobs, len(tasks)), finish)
            for i in broken:  # the pool broke: each unfinished task alone, in a fresh worker
                for attempt in range(1, max_retries + 2):
                    if not _run_pool(fn, tasks, [i], 1, finish, attempt):
                        break
                else:
                    finish(Outcome(i, None, f"worker process died ({max_retries + 1} attempts)", max_retries + 1))
    return [o for o in outcomes if o is not None]


def _run_pool(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    indices: list[int],
    workers: int,
    finish: Callable[[Outcome], None],
    attempt: int = 1,
) -> list[int]:
    """Run ``indices`` in one pool; the indices whose worker died (pool broken) are returned, not finished."""
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context("spawn"), initializer=die_with_parent, initargs=(os.getpid(),)
    )
    broken: list[int] = []
    try:
        futures: dict[Future[tuple[bool, Any]], int] = {pool.submit(call_captured, fn, tasks[i]): i for i in indices}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=futures.__getitem__):
                i = futures[fut]
                try:
                    ok, value = fut.result()
                except BrokenProcessPool:
                    broken.append(i)
                    continue
                finish(Outcome(i, value if ok else None, None if ok else value, attempt))
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return sorted(broken)


def stop_pool(pool: ProcessPoolExecutor, grace_s: float = 3.0) -> None:
    """Cancel queued tasks and stop the workers now (SIGTERM, then SIGKILL after ``grace_s``)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(grace_s)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    pool.shutdown(wait=False, cancel_futures=True)
