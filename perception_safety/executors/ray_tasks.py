"""Ray executor: each task a Ray task (retried when its worker dies, memory reserved), results returned as data.

The driver connects to a cluster (``ray_address``) or starts a Ray instance on this machine (loopback only, no
dashboard, ``jobs`` CPUs) and shuts down only what it started. Outcomes are collected as tasks finish (the
progress bar counts them across the cluster); an interrupt (Ctrl-C, SIGTERM) cancels every unfinished task on
the cluster. Inputs named in task arguments (bag paths, output folders) must be readable/writable by every
worker: a shared filesystem.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from perception_safety.executors.base import ExecutorError, OnDone, Outcome, call_captured
from perception_safety.executors.config import ExecutorConfig
from perception_safety.executors.lifetime import sigterm_interrupts
from perception_safety.executors.ray_reaper import start_reaper

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Read by ray at import: "0" makes a node started here take 127.0.0.1 as its address, so every Ray service of
that instance (GCS, raylet, workers, agents) listens on loopback only (as on a laptop), not on all interfaces."""


def _ray(local_instance: bool = False) -> Any:
    if local_instance and "ray" not in sys.modules:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is in requirements.txt
        raise ExecutorError("--executor ray needs the 'ray' package (pip install ray)") from exc
    return ray


def connect(cfg: ExecutorConfig) -> Callable[[], None]:
    """Connect (or start) as ``cfg`` says; returns the matching clean-up (a no-op when already connected)."""
    ray = _ray(local_instance=cfg.ray_address is None)
    if ray.is_initialized():
        return lambda: None
    common: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    temp = None
    reaper = None
    try:
        if cfg.ray_address is None:
            temp = cfg.temp_dir or tempfile.mkdtemp(prefix="ps-ray-")
            # the instance dies with this process, even by kill -9 (ray_reaper); its temp folder goes with it
            reaper = start_reaper(os.path.dirname(ray.__file__), None if cfg.temp_dir else temp)
            ray.init(
                num_cpus=cfg.jobs,
                include_dashboard=False,
                _temp_dir=temp,
                _node_ip_address="127.0.0.1",
                **common,
            )
        else:
            ray.init(address=cfg.ray_address, **common)
    except Exception as exc:
        if reaper is not None:
            reaper.finish()
        where = f"cluster at {cfg.ray_address!r}" if cfg.ray_address else "local Ray instance"
        raise ExecutorError(f"executor ray: cannot connect to the {where}: {exc}") from exc

    def close() -> None:
        ray.shutdown()
        if reaper is not None:
            reaper.finish()
        if temp is not None and cfg.temp_dir is None:
            shutil.rmtree(temp, ignore_errors=True)

    return close


def _check_memory(ray: Any, memory: int | None) -> None:
    """A task that asks more memory than any node has would wait forever: refuse it up front."""
    if memory is None:
        return
    best = max((n.get("Resources", {}).get("memory", 0.0) for n in ray.nodes() if n.get("Alive")), default=0.0)
    if best < memory:
        raise ExecutorError(
            f"executor.memory_mb: {memory / 2**20:.0f} MB per task, but the largest Ray node offers "
            f"{best / 2**20:.0f} MB; lower executor.memory_mb"
        )


def run_ray(
    fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]], cfg: ExecutorConfig, on_done: OnDone | None = None
) -> list[Outcome]:
    """Run ``fn(*args)`` as one Ray task per ``args``; outcomes in input order (``on_done`` as they end)."""
    ray = _ray()
    close = connect(cfg)
    try:
        memory = cfg.memory_mb * 2**20 if cfg.memory_mb is not None else None
        _check_memory(ray, memory)
        options: dict[str, Any] = {"max_retries": cfg.max_retries, "retry_exceptions": False, "num_cpus": 1}
        if memory is not None:
            options["memory"] = memory
        remote = ray.remote(call_captured).options(**options)
        refs = [remote.remote(fn, tuple(args)) for args in tasks]
        return _collect(ray, refs, cfg.max_retries, on_done)
    finally:
        close()


def _collect(ray: Any, refs: list[Any], max_retries: int, on_done: OnDone | None) -> list[Outcome]:
    index = {ref: i for i, ref in enumerate(refs)}
    outcomes: list[Outcome | None] = [None] * len(refs)
    pending = list(refs)
    try:
        with sigterm_interrupts():
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
                for ref in done:
                    i = index[ref]
                    try:
                        ok, value = ray.get(ref)
                        out = Outcome(i, value if ok else None, None if ok else value)
                    except ray.exceptions.RayError as exc:
                        first = (str(exc).strip().splitlines() or [""])[0][:500]
                        out = Outcome(
                            i, None, f"{type(exc).__name__} after {max_retries} retries: {first}", max_retries + 1
                        )
                    outcomes[i] = out
                    if on_done is not None:
                        on_done(out)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return [o for o in outcomes if o is not None]
