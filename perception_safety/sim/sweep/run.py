"""Running a sweep: every planned episode not yet finished (resume), in this process, on local workers, on Ray
or on a pool of CARLA servers; then the summary into results.json."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perception_safety.executors import ExecutorConfig, Outcome, run_tasks
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.safe_io import write_text
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.sweep.engine import EpisodeEngine
from perception_safety.sim.sweep.planning import (
    SWEEP_CONFIG_FILE,
    EpisodeRunError,
    EpisodeSpec,
    check_camera_mount,
    check_sweep_fingerprint,
    plan_episodes,
    sweep_fingerprint,
)
from perception_safety.sim.sweep.recording import BAGS_DIR, LOGS_DIR, _remove, write_episode
from perception_safety.sim.sweep.rollout import StageTimes
from perception_safety.sim.sweep.summary import RESULTS_FILE, summarize

_ENGINES: dict[str, EpisodeEngine] = {}


def _episode_task(
    cfg: EpisodesConfig, backend: str, monitors: MonitorsConfig, spec: EpisodeSpec, out: str
) -> dict[str, float]:
    """One episode in a worker (local process or Ray task): run it, write its files under ``out``, return times.

    The engine (renderer caches, detector model) is kept per worker process between the episodes it runs.
    """
    key = json.dumps([cfg.model_dump(mode="json"), backend, monitors.model_dump(mode="json")], sort_keys=True)
    engine = _ENGINES.get(key)
    if engine is None:
        _ENGINES.clear()
        engine = _ENGINES[key] = EpisodeEngine(cfg, backend, monitors)
    rollouts, times = engine.run(spec)
    t0 = time.perf_counter()
    write_episode(Path(out), spec, rollouts, cfg, backend)
    times.record += time.perf_counter() - t0
    return times.as_dict()


def _carla_episode_task(
    server: str, cfg: EpisodesConfig, monitors: MonitorsConfig, spec: EpisodeSpec, out: str
) -> dict[str, float]:
    """`_episode_task` on the CARLA server ``HOST:PORT`` of the pool; a server that stops answering (the carla
    client raises RuntimeError on its time-outs) makes the episode go to another server."""
    from perception_safety.executors.slots import SlotUnavailableError

    host, port = server.rsplit(":", 1)
    carla = cfg.carla.model_copy(update={"host": host.strip("[]"), "port": int(port), "servers": ()})
    try:
        return _episode_task(cfg.model_copy(update={"carla": carla}), "carla", monitors, spec, out)
    except (SlotUnavailableError, RuntimeError) as exc:
        for engine in _ENGINES.values():
            with contextlib.suppress(Exception):  # the server is gone; nothing left to restore
                engine.close()
        _ENGINES.clear()
        if isinstance(exc, SlotUnavailableError):
            raise
        raise SlotUnavailableError(f"CARLA server {server} stopped answering: {exc}") from exc


@dataclass
class SweepReport:
    """What a sweep did: episodes run and skipped, stage times, the results file."""

    planned: int
    ran: int
    skipped: int
    seconds: float
    times: StageTimes
    results_path: Path
    results: dict[str, Any]



def run_sweep(
    cfg: EpisodesConfig,
    out: str | Path,
    backend: str = "builtin",
    jobs: int = 1,
    resume: bool = False,
    monitors: MonitorsConfig | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    executor: ExecutorConfig | None = None,
) -> SweepReport:
    """Run every planned episode not yet finished (with ``resume``), then compute SG/RH/AC into results.json.

    With ``jobs`` > 1 or a Ray ``executor``, each episode is one task (local worker process or Ray task) that
    writes its files under ``out`` (on a cluster: a folder every worker can write, e.g. a shared filesystem).
    An episode whose task fails is named in the error raised after the others finished (``--resume`` reruns it).
    """
    out = Path(out)
    executor = executor or ExecutorConfig(jobs=max(jobs, 1))
    monitors = monitors or MonitorsConfig()
    specs = plan_episodes(cfg)
    check_camera_mount(specs, monitors)
    logs_dir = out / LOGS_DIR
    done = {p.stem for p in logs_dir.glob("*.jsonl")} if logs_dir.is_dir() else set()
    if done and not resume:
        raise EpisodeRunError(
            f"{out}: already holds {len(done)} finished episode(s); pass --resume to continue, or choose a new --out"
        )
    fingerprint = sweep_fingerprint(cfg, monitors, backend)
    check_sweep_fingerprint(out, fingerprint, bool(done))
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / SWEEP_CONFIG_FILE, json.dumps(fingerprint, indent=1, sort_keys=True) + "\n")
    for stale in list(logs_dir.glob(".*.tmp")) + list((out / BAGS_DIR).glob(".*.tmp")):
        _remove(stale)
    todo = [s for s in specs if s.episode_id not in done]
    t_start = time.perf_counter()
    times = StageTimes()
    if progress:
        progress(len(specs) - len(todo), len(specs), "")
    finished = len(specs) - len(todo)
    pool = backend == "carla" and bool(cfg.carla.servers)
    if todo and not pool and executor.kind == "local" and (executor.jobs <= 1 or backend == "carla"):
        engine = EpisodeEngine(cfg, backend, monitors)
        try:
            for spec in todo:
                rollouts, t = engine.run(spec)
                t0 = time.perf_counter()
                write_episode(out, spec, rollouts, cfg, backend)
                t.record += time.perf_counter() - t0
                times.add(t)
                finished += 1
                if progress:
                    progress(finished, len(specs), spec.episode_id)
        finally:
            engine.close()
    elif todo:
        _run_parallel(todo, specs, cfg, backend, monitors, out, executor, times, progress, finished)
    results = summarize(out, specs, cfg)
    results_path = out / RESULTS_FILE
    write_text(results_path, json.dumps(results, indent=2, sort_keys=True) + "\n")  # atomic, no write through links
    return SweepReport(
        len(specs), len(todo), len(specs) - len(todo), time.perf_counter() - t_start, times, results_path, results
    )


def _run_parallel(
    todo: list[EpisodeSpec],
    specs: list[EpisodeSpec],
    cfg: EpisodesConfig,
    backend: str,
    monitors: MonitorsConfig,
    out: Path,
    executor: ExecutorConfig,
    times: StageTimes,
    progress: Callable[[int, int, str], None] | None,
    finished: int,
) -> None:
    """One task per episode (local workers or Ray; with a CARLA server pool, one episode per server at a time)."""
    failed: list[str] = []

    def done(o: Outcome) -> None:
        nonlocal finished
        spec = todo[o.index]
        if o.ok:
            part = {k: (int(v) if k in ("frames", "perturbed") else v) for k, v in o.value.items()}
            times.add(StageTimes(**part))
        else:
            failed.append(f"{spec.episode_id}: {o.error}")
        finished += 1
        if progress:
            progress(finished, len(specs), spec.episode_id)

    target = str(out.resolve())
    if backend == "carla" and cfg.carla.servers:
        from perception_safety.executors.slots import run_on_slots

        tasks = [(cfg, monitors, spec, target) for spec in todo]
        run_on_slots(_carla_episode_task, tasks, cfg.carla.servers, executor, done)
    else:
        run_tasks(_episode_task, [(cfg, backend, monitors, spec, target) for spec in todo], executor, done)
    if failed:
        lines = "\n  ".join(failed)
        raise EpisodeRunError(f"{len(failed)} episode(s) failed (others kept; --resume reruns these):\n  {lines}")
