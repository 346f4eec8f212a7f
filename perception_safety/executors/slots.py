"""Tasks that each need one of a few exclusive resources ("slots", e.g. CARLA servers), on any executor.

Each slot runs one task at a time. A task that raises `SlotUnavailableError` (its server died or never answered)
takes its slot out of service and goes back to the queue for another slot; any other failure is the task's
result. When every slot is out of service, the tasks left fail with each slot's reason. The scheduling runs
on the driver; the tasks run in local worker processes (one per slot) or as Ray tasks.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any

from perception_safety.errors import PerceptionSafetyError
from perception_safety.executors.base import OnDone, Outcome, failure_reason
from perception_safety.executors.config import ExecutorConfig
from perception_safety.executors.lifetime import die_with_parent, sigterm_interrupts


class SlotUnavailableError(PerceptionSafetyError):
    """The slot a task ran on is gone (e.g. its CARLA server stopped answering): run the task elsewhere."""


def call_on_slot(fn: Callable[..., Any], slot: Hashable, args: tuple[Any, ...]) -> tuple[str, Any]:
    """``("ok", fn(slot, *args))``, ``("slot", reason)`` when the slot is gone, ``("error", reason)`` otherwise."""
    try:
        return "ok", fn(slot, *args)
    except SlotUnavailableError as exc:
        return "slot", failure_reason(exc)
    except Exception as exc:
        return "error", failure_reason(exc)


class _Local:
    def __init__(self, workers: int) -> None:
        self.pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=get_context("spawn"), initializer=die_with_parent, initargs=(os.getpid(),)
        )

    def submit(self, args: tuple[Any, ...]) -> Any:
        return self.pool.submit(call_on_slot, *args)

    def wait_any(self, handles: list[Any]) -> list[tuple[Any, str, Any]]:
        done, _ = wait(handles, timeout=0.5, return_when=FIRST_COMPLETED)
        out = []
        for h in done:
            try:
                out.append((h, *h.result()))
            except Exception as exc:
                out.append((h, "crash", f"worker process died: {failure_reason(exc)}"))
        return out

    def cancel(self, handles: list[Any]) -> None:
        from perception_safety.executors.local import stop_pool

        stop_pool(self.pool)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class _Ray:
    def __init__(self, cfg: ExecutorConfig) -> None:
        from perception_safety.executors.ray_tasks import _check_memory, _ray, connect

        self.ray = _ray()
        self.close = connect(cfg)
        memory = cfg.memory_mb * 2**20 if cfg.memory_mb is not None else None
        _check_memory(self.ray, memory)
        opts: dict[str, Any] = {"max_retries": cfg.max_retries, "retry_exceptions": False, "num_cpus": 1}
        if memory is not None:
            opts["memory"] = memory
        self.remote = self.ray.remote(call_on_slot).options(**opts)
        self.max_retries = cfg.max_retries

    def submit(self, args: tuple[Any, ...]) -> Any:
        return self.remote.remote(*args)

    def wait_any(self, handles: list[Any]) -> list[tuple[Any, str, Any]]:
        done, _ = self.ray.wait(handles, num_returns=1, timeout=0.5)
        out = []
        for h in done:
            try:
                out.append((h, *self.ray.get(h)))
            except self.ray.exceptions.RayError as exc:
                first = (str(exc).strip().splitlines() or [""])[0][:500]
                out.append((h, "crash", f"{type(exc).__name__} after {self.max_retries} retries: {first}"))
        return out

    def cancel(self, handles: list[Any]) -> None:
        for h in handles:
            self.ray.cancel(h, force=True)


def run_on_slots(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    slots: Sequence[Hashable],
    cfg: ExecutorConfig,
    on_done: OnDone | None = None,
) -> list[Outcome]:
    """``fn(slot, *args)`` for each ``args``, at most one task per slot at a time; outcomes in input order."""
    outcomes: list[Outcome | None] = [None] * len(tasks)
    attempts = [0] * len(tasks)

    def finish(out: Outcome) -> None:
        outcomes[out.index] = out
        if on_done is not None:
            on_done(out)

    if not tasks:
        return []
    runner: Any = _Local(len(slots)) if cfg.kind == "local" else _Ray(cfg)
    queue = deque(range(len(tasks)))
    free = list(dict.fromkeys(slots))
    dead: dict[Hashable, str] = {}
    running: dict[Any, tuple[int, Hashable]] = {}
    try:
        with sigterm_interrupts():
            while queue or running:
                while queue and free:
                    i, slot = queue.popleft(), free.pop(0)
                    attempts[i] += 1
                    running[runner.submit((fn, slot, tuple(tasks[i])))] = (i, slot)
                if not running:
                    why = "; ".join(f"{s}: {r}" for s, r in dead.items())
                    for i in queue:
                        finish(Outcome(i, None, f"no server left to run it ({why})", attempts[i]))
                    break
                for handle, status, value in runner.wait_any(list(running)):
                    i, slot = running.pop(handle)
                    if status == "slot":
                        dead[slot] = value
                        queue.appendleft(i)
                        continue
                    free.append(slot)
                    ok = status == "ok"
                    finish(Outcome(i, value if ok else None, None if ok else value, attempts[i]))
    except BaseException:
        runner.cancel(list(running))
        raise
    finally:
        runner.close()
    return [o for o in outcomes if o is not None]
