"""Episode runner: scenario x perturbation x intensity, three aligned rollouts each, SG/RH/AC (E1, E2).

For every episode the three rollouts of the SG/RH/AC paper (Section III-B) run with identical seeds:
``perception`` (f: the simulated detector drives the stop rule), ``monitored`` (f with m_f: a monitor
alarm also brakes) and ``ground_truth`` (f*: ground truth drives the stop rule). The runtime monitor
is evaluated and logged in all three; it acts only in ``monitored``. Each rollout is written as an
episode log record set and a rosbag2; an episode's files appear atomically (written under a
temporary name, renamed when complete), which is what ``resume`` relies on.

On the builtin backend the rollouts advance in lockstep and share every frame whose world state
and control history coincide (rendering, perturbation and detection run once per distinct state);
on CARLA they run one after another on the server.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.returns import (
    LOGGED_CONFIG_KEY,
    E2Config,
    align,
    e1_metrics,
    e2_metrics,
)
from perception_safety.executors import ExecutorConfig, Outcome, run_tasks
from perception_safety.io.config import load_model
from perception_safety.io.episode_log import ROLLOUTS, EpisodeLogWriter, EpisodeStep, read_episode_log
from perception_safety.io.image_codec import jpeg_roundtrip
from perception_safety.monitors.base import MonitorResult
from perception_safety.monitors.composite import CompositeMonitor, build_runtime_monitor, build_stop_rule
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.perturbations import PERTURBATIONS, frame_seed, perturb
from perception_safety.sim.builtin import BuiltinBackend
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.detector_adapter import ImageDetectorAdapter, build_image_detector, frame_detector
from perception_safety.sim.detector_model import DetectorModel, ground_truth_detections
from perception_safety.sim.render import Renderer, SceneTextures
from perception_safety.sim.scenario import Backend, Control, Observation, ScenarioConfig

PERCEPTION, MONITORED, GROUND_TRUTH = ROLLOUTS
CLEAN = "none"
LOGS_DIR = "logs"
BAGS_DIR = "bags"
RESULTS_FILE = "results.json"
STOPPED_SPEED = 0.05  # m/s: below this the ego counts as stopped (CARLA reports tiny residual speeds)


class EpisodeRunError(PerceptionSafetyError):
    """The sweep cannot run as configured (unknown perturbation, output folder in use, ...)."""


# ------------------------------------------------------------------------------------ planning


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of the sweep: scenario variant, perturbation, intensity level and seed."""

    index: int
    episode_id: str
    scenario_name: str
    scenario: ScenarioConfig
    perturbation: str
    level: int
    seed: int


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def plan_episodes(cfg: EpisodesConfig) -> list[EpisodeSpec]:
    """Every (scenario variant, perturbation, level) of the config, in a fixed order with fixed ids and seeds."""
    grid: list[tuple[str, int]] = []
    if cfg.include_clean:
        grid.append((CLEAN, 0))
    if cfg.perturbations is None:
        grid += [(name, lv) for name, kind in PERTURBATIONS.items() for lv in range(1, kind.levels + 1)]
    else:
        for i, p in enumerate(cfg.perturbations):
            kind = PERTURBATIONS.get(p.name)
            if kind is None:
                raise EpisodeRunError(
                    f"episodes.perturbations[{i}].name: unknown perturbation {p.name!r} "
                    f"(known: {', '.join(PERTURBATIONS)})"
                )
            levels = p.levels if p.levels is not None else tuple(range(1, kind.levels + 1))
            for lv in levels:
                if not 0 <= lv <= kind.levels:
                    raise EpisodeRunError(
                        f"episodes.perturbations[{i}].levels: {p.name} has levels 1..{kind.levels}, got {lv}"
                    )
                grid.append((p.name, lv))
    base = cfg.scenario.model_dump()
    specs = []
    names = [v.name for v in cfg.scenarios]
    if len(set(names)) != len(names):
        raise EpisodeRunError(f"episodes.scenarios: duplicate names {names}")
    for variant in cfg.scenarios:
        try:
            scen = ScenarioConfig.model_validate(_deep_merge(base, variant.overrides))
        except ValueError as exc:
            raise EpisodeRunError(f"episodes.scenarios[{variant.name}].overrides: {exc}") from exc
        for name, lv in grid:
            i = len(specs)
            eid = f"{i:03d}-{variant.name}-{name}-{lv}"
            specs.append(EpisodeSpec(i, eid, variant.name, scen, name, lv, cfg.seed * 100_003 + i))
    return specs


# ------------------------------------------------------------------------------------ one rollout


@dataclass
class StageTimes:
    """Seconds spent per stage (render includes kinematics and ground truth)."""

    render: float = 0.0
    perturb: float = 0.0
    detect: float = 0.0
    monitor: float = 0.0
    record: float = 0.0
    frames: int = 0
    perturbed: int = 0

    _KEYS = ("render", "perturb", "detect", "monitor", "record", "frames", "perturbed")

    def add(self, other: StageTimes) -> None:
        for k in self._KEYS:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self._KEYS}


@dataclass
class _Rollout:
    """Per-rollout state: its monitor, braking latch, recorded steps and bag frames."""

    name: str
    monitor: CompositeMonitor
    braking: bool = False
    done: bool = False
    end_reason: str = ""
    steps: list[EpisodeStep] = field(default_factory=list)
    bag_frames: list[Frame] = field(default_factory=list)
    bag_results: list[tuple[MonitorResult, ...]] = field(default_factory=list)
    bag_jpegs: list[bytes | None] = field(default_factory=list)
    collided: bool = False
    first_alarm: int | None = None
    first_stop: int | None = None


class EpisodeEngine:
    """Runs episodes in one process; keeps the renderer, detector and monitor configs between episodes."""

    def __init__(self, cfg: EpisodesConfig, backend: str = "builtin", monitors: MonitorsConfig | None = None) -> None:
        if backend not in ("builtin", "carla"):
            raise EpisodeRunError(f"--backend: expected 'builtin' or 'carla', got {backend!r}")
        self.cfg = cfg
        self.backend_name = backend
        self.monitors = monitors or MonitorsConfig()
        self._renderers: dict[str, Renderer] = {}
        self._carla: Any = None
        self._image_detector: ImageDetectorAdapter | None = None  # episodes.detector.kind hog/onnx, built once
        self.times = StageTimes()

    # -- backends ---------------------------------------------------------------------------------
    def _renderer(self, scen: ScenarioConfig) -> Renderer:
        key = scen.model_dump_json() + str(self.cfg.builtin.texture_seed)
        if key not in self._renderers:
            self._renderers[key] = Renderer(
                scen, SceneTextures(scen, self.cfg.builtin.texture_seed), self.cfg.builtin.background_cache
            )
        return self._renderers[key]

    def _builtin(self, scen: ScenarioConfig) -> BuiltinBackend:
        return BuiltinBackend(scen, self.cfg.builtin, renderer=self._renderer(scen))

    def close(self) -> None:
        if self._carla is not None:
            self._carla.close()
            self._carla = None

    # -- one episode ------------------------------------------------------------------------------
    def run(self, spec: EpisodeSpec) -> tuple[dict[str, _Rollout], StageTimes]:
        """The three rollouts of one episode (nothing written)."""
        times = StageTimes()
        if self._image_detector is None and self.cfg.detector.kind != "simulated":
            self._image_detector = build_image_detector(self.cfg.detector)
        det = frame_detector(self.cfg.detector, self._image_detector, _focal(spec.scenario),
                             (spec.scenario.camera.width, spec.scenario.camera.height))
        rollouts = {r: _Rollout(r, build_runtime_monitor(self.monitors)) for r in ROLLOUTS}
        if self.backend_name == "builtin":
            self._run_lockstep(spec, rollouts, det, times)
        else:
            self._run_sequential(spec, rollouts, det, times)
        self.times.add(times)
        return rollouts, times

    def _perturbed(self, spec: EpisodeSpec, obs: Observation) -> np.ndarray:
        if spec.perturbation == CLEAN or spec.level == 0:
            return obs.image
        return perturb(obs.image, spec.perturbation, spec.level, frame_seed(spec.seed, obs.index, spec.perturbation))

    def _run_lockstep(
        self, spec: EpisodeSpec, rollouts: dict[str, _Rollout], det: DetectorModel, times: StageTimes
    ) -> None:
        scen = spec.scenario
        backends = {r: self._builtin(scen) for r in ROLLOUTS}
        t0 = time.perf_counter()
        first = backends[PERCEPTION].reset(spec.seed)
        for r in (MONITORED, GROUND_TRUTH):
            backends[r].sync_from(backends[PERCEPTION])
        times.render += time.perf_counter() - t0
        obs = dict.fromkeys(ROLLOUTS, first)
        controls: dict[str, Control] = {}
        for t in range(scen.frames):
            live = [r for r in ROLLOUTS if not rollouts[r].done]
            if not live:
                break
            if t > 0:
                # one simulation step per distinct (world state, control)
                t0 = time.perf_counter()
                cache: dict[tuple[Any, Control], tuple[Observation, BuiltinBackend]] = {}
                for r in live:
                    key = (backends[r].state, controls[r])
                    if key not in cache:
                        cache[key] = (backends[r].step(controls[r]), backends[r])
                    else:
                        backends[r].sync_from(cache[key][1])
                    obs[r] = cache[key][0]
                times.render += time.perf_counter() - t0
            perturbed: dict[int, np.ndarray] = {}
            camera: dict[int, tuple[np.ndarray, bytes | None]] = {}
            detections: dict[int, Any] = {}
            for r in live:
                o = obs[r]
                t0 = time.perf_counter()
                if id(o) not in perturbed:
                    perturbed[id(o)] = self._perturbed(spec, o)
                    times.perturbed += 1
                img = perturbed[id(o)]
                t1 = time.perf_counter()
                times.perturb += t1 - t0
                if id(o) not in camera:
                    camera[id(o)] = self._camera(img, times)
                t1 = time.perf_counter()
                if r == GROUND_TRUTH:
                    dets = ground_truth_detections(o.ground_truth)
                else:
                    if id(o) not in detections:
                        detections[id(o)] = det.detect(o.ground_truth, o.image, img, spec.seed, o.index)
                    dets = detections[id(o)]
                times.detect += time.perf_counter() - t1
                controls[r] = self._judge(spec, rollouts[r], o, *camera[id(o)], dets, times)
            times.frames += 1

    def _run_sequential(
        self, spec: EpisodeSpec, rollouts: dict[str, _Rollout], det: DetectorModel, times: StageTimes
    ) -> None:
        if self._carla is None:
            from perception_safety.sim.carla_backend import CarlaBackend

            self._carla = CarlaBackend(spec.scenario, self.cfg.carla)
        backend: Backend = self._carla
        backend.cfg = spec.scenario  # type: ignore[attr-defined]
        for r in ROLLOUTS:
            roll = rollouts[r]
            t0 = time.perf_counter()
            o = backend.reset(spec.seed)
            times.render += time.perf_counter() - t0
            control = Control.DRIVE
            for t in range(spec.scenario.frames):
                if t > 0:
                    t0 = time.perf_counter()
                    o = backend.step(control)
                    times.render += time.perf_counter() - t0
                t0 = time.perf_counter()
                img = self._perturbed(spec, o)
                times.perturbed += 1
                times.perturb += time.perf_counter() - t0
                seen, payload = self._camera(img, times)
                t1 = time.perf_counter()
                dets = (
                    ground_truth_detections(o.ground_truth)
                    if r == GROUND_TRUTH
                    else det.detect(o.ground_truth, o.image, img, spec.seed, o.index)
                )
                times.detect += time.perf_counter() - t1
                control = self._judge(spec, roll, o, seen, payload, dets, times)
                times.frames += 1
                if roll.done:
                    break

    def _camera(self, img: np.ndarray, times: StageTimes) -> tuple[np.ndarray, bytes | None]:
        """The image the monitors see and its recorded JPEG: with ``record.images: compressed`` the decoded
        JPEG (what a node receiving the bag's CompressedImage sees), else the image itself."""
        if self.cfg.record.images != "compressed":
            return img, None
        t0 = time.perf_counter()
        payload, seen = jpeg_roundtrip(img, self.cfg.record.jpeg_quality)
        times.record += time.perf_counter() - t0
        return seen, payload

    def _judge(
        self, spec: EpisodeSpec, roll: _Rollout, o: Observation, img: np.ndarray, payload: bytes | None, dets: Any,
        times: StageTimes,
    ) -> Control:
        """Monitor, stop rule and planner for one rollout frame (``img``: the image the monitors see, ``payload``:
        its recorded JPEG); records the step; returns the next control."""
        t0 = time.perf_counter()
        frame = Frame(o.stamp_ns, tuple(dets), o.ground_truth, o.ego, img, "camera", getattr(dets, "candidates", None))
        verdict = roll.monitor.evaluate(frame)
        stop_rule = _stop_rule(self.monitors)
        stop_result = stop_rule.update(frame)
        stop_request = stop_result.alarm
        alarm = verdict.combined.alarm
        want = stop_request or (roll.name == MONITORED and alarm)
        roll.braking = (roll.braking and self.cfg.latch_brake) or want
        t1 = time.perf_counter()
        times.monitor += t1 - t0
        if alarm and roll.first_alarm is None:
            roll.first_alarm = o.index
        if roll.braking and roll.first_stop is None:
            roll.first_stop = o.index
        running = o.ego.speed > STOPPED_SPEED
        roll.collided = roll.collided or o.collision
        roll.steps.append(
            EpisodeStep(
                t=o.index,
                running=running,
                collision=o.collision,
                stop=roll.braking,
                alarm=alarm,
                frame=replace(frame, image=None),
                reasons=verdict.combined.reasons,
                values=dict(verdict.combined.values),
            )
        )
        rec = self.cfg.record
        if rec.bags:
            image = img if rec.images == "raw" else None
            roll.bag_frames.append(replace(frame, image=image))
            roll.bag_jpegs.append(payload)
            roll.bag_results.append((*verdict.parts, verdict.combined, stop_result))
        times.record += time.perf_counter() - t1
        last = o.index >= spec.scenario.frames - 1
        if o.collided and self.cfg.end_when_stopped:
            roll.done, roll.end_reason = True, "collision"
        elif self.cfg.end_when_stopped and roll.braking and not running:
            roll.done, roll.end_reason = True, "stopped"
        elif last:
            roll.done, roll.end_reason = True, "horizon"
        return Control.BRAKE if roll.braking else Control.DRIVE


_STOP_RULES: dict[str, Any] = {}


def _stop_rule(monitors: MonitorsConfig) -> Any:
    key = monitors.model_dump_json()
    if key not in _STOP_RULES:
        _STOP_RULES[key] = build_stop_rule(monitors)
    return _STOP_RULES[key]


def _focal(scen: ScenarioConfig) -> float:
    from perception_safety.sim.camera import Intrinsics

    return Intrinsics.from_fov(scen.camera.width, scen.camera.height, scen.camera.fov_deg).fx


# ------------------------------------------------------------------------------------ files


def inside(out: Path, *parts: str) -> Path:
    """``out/parts...``, refused when a part would lead outside ``out`` (names come from config files)."""
    path = out.joinpath(*parts)
    if any(p in ("", ".", "..") or "/" in p or "\\" in p for p in parts) or not path.resolve().is_relative_to(
        out.resolve()
    ):
        raise EpisodeRunError(f"{'/'.join(parts)!r}: not a plain name inside {out}; refusing to write outside it")
    return path


def episode_log_path(out: Path, spec: EpisodeSpec) -> Path:
    return inside(out, LOGS_DIR, f"{spec.episode_id}.jsonl")


def episode_meta(spec: EpisodeSpec, backend: str, roll: _Rollout) -> dict[str, Any]:
    """Everything needed to re-run or group an episode (no wall-clock values: logs are byte-reproducible)."""
    return {
        "index": spec.index,
        "scenario": spec.scenario_name,
        "perturbation": spec.perturbation,
        "level": spec.level,
        "seed": spec.seed,
        "backend": backend,
        "fps": spec.scenario.fps,
        "frames": spec.scenario.frames,
        "first_alarm": roll.first_alarm,
        "first_stop": roll.first_stop,
    }


def bag_conditions(spec: EpisodeSpec, rollout: str) -> dict[str, Any]:
    """What a rollout bag records about itself in metadata.yaml (io.bag_inputs reads it: roles, breakdowns)."""
    return {
        "rollout": rollout,
        "episode": spec.episode_id,
        "scenario": spec.scenario_name,
        "perturbation": spec.perturbation,
        "level": spec.level,
    }


def write_episode(
    out: Path, spec: EpisodeSpec, rollouts: dict[str, _Rollout], cfg: EpisodesConfig, backend: str
) -> Path:
    """Write the episode's bags and log under temporary names, then rename: the log appears last and whole."""
    log = episode_log_path(out, spec)
    tmp_log = log.with_name(f".{log.name}.tmp")
    bag_dir = inside(out, BAGS_DIR, spec.episode_id)
    tmp_bags = bag_dir.with_name(f".{bag_dir.name}.tmp")
    for stale in (tmp_log, tmp_bags, bag_dir):
        _remove(stale)
    if cfg.record.bags:
        from perception_safety.io.bag import CameraInfoSpec, write_frames

        tmp_bags.mkdir(parents=True)
        from perception_safety.sim.camera import Intrinsics

        cam = spec.scenario.camera
        intr = Intrinsics.from_fov(cam.width, cam.height, cam.fov_deg)
        info = CameraInfoSpec((cam.width, cam.height), (intr.fx, intr.fy, intr.cx, intr.cy))
        for r, roll in rollouts.items():
            custom = {f"perception_safety.{key}": str(v) for key, v in bag_conditions(spec, r).items()}
            write_frames(tmp_bags / r, roll.bag_frames, cfg.record.storage, cfg.record.topics, roll.bag_results, custom,
                         compressed=roll.bag_jpegs if cfg.record.images == "compressed" else None,
                         camera_info=info)
        tmp_bags.rename(bag_dir)
    log.parent.mkdir(parents=True, exist_ok=True)
    with EpisodeLogWriter(tmp_log) as writer:
        for r, roll in rollouts.items():
            meta = {**episode_meta(spec, backend, roll), LOGGED_CONFIG_KEY: cfg.returns.model_dump(mode="json")}
            writer.write_episode(spec.episode_id, r, roll.steps, meta, roll.end_reason)
    tmp_log.rename(log)
    return log


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# ------------------------------------------------------------------------------------ sweep


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


SWEEP_CONFIG_FILE = "sweep_config.json"


def sweep_fingerprint(cfg: EpisodesConfig, monitors: MonitorsConfig, backend: str) -> dict[str, Any]:
    """Everything that decides an episode's content (the monitors' file path itself excluded)."""
    episodes = cfg.model_dump(mode="json", exclude={"monitors_file": True, "executor": True, "carla": {"servers"}})
    return {"backend": backend, "episodes": episodes, "monitors": monitors.model_dump(mode="json")}


def check_sweep_fingerprint(out: Path, fingerprint: dict[str, Any], has_episodes: bool) -> None:
    """Refuse to resume into a folder whose finished episodes were recorded with another configuration."""
    path = out / SWEEP_CONFIG_FILE
    if not has_episodes or not path.is_file():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EpisodeRunError(f"{path}: unreadable ({exc}); remove {out} or choose a new --out") from exc
    if recorded != json.loads(json.dumps(fingerprint, sort_keys=True)):
        changed = sorted(k for k in fingerprint if recorded.get(k) != json.loads(json.dumps(fingerprint[k])))
        raise EpisodeRunError(
            f"{out}: its finished episodes were recorded with a different configuration (changed: "
            f"{', '.join(changed)}); remove {out} or choose a new --out"
        )


def monitors_for(cfg: EpisodesConfig, config_path: str | Path | None) -> MonitorsConfig:
    """The runtime monitor config: ``monitors_file``, else the ``monitors`` section of the episodes file."""
    if cfg.monitors_file is not None:
        return load_model(cfg.monitors_file, MonitorsConfig, section="monitors")
    return load_model(config_path, MonitorsConfig, section="monitors")


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
    logs_dir = out / LOGS_DIR
    done = {p.stem for p in logs_dir.glob("*.jsonl")} if logs_dir.is_dir() else set()
    if done and not resume:
        raise EpisodeRunError(
            f"{out}: already holds {len(done)} finished episode(s); pass --resume to continue, or choose a new --out"
        )
    fingerprint = sweep_fingerprint(cfg, monitors, backend)
    check_sweep_fingerprint(out, fingerprint, bool(done))
    out.mkdir(parents=True, exist_ok=True)
    (out / SWEEP_CONFIG_FILE).write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n", encoding="utf-8")
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
    tmp = results_path.with_name(f".{RESULTS_FILE}.tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.rename(results_path)
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


# ------------------------------------------------------------------------------------ SG/RH/AC


def summarize(out: Path, specs: Iterable[EpisodeSpec], cfg: EpisodesConfig) -> dict[str, Any]:
    """SG/RH/AC for E1 and E2, overall and per perturbation, from the episode logs in ``out``."""
    specs = list(specs)
    episodes = []
    for spec in specs:
        path = episode_log_path(out, spec)
        if not path.exists():
            raise EpisodeRunError(f"{path}: episode log missing; re-run with --resume")
        episodes.extend(read_episode_log(path))
    horizon = max((s.scenario.frames for s in specs), default=2)
    e2cfg = E2Config(horizon=cfg.returns.e2.horizon or horizon, collision_once=cfg.returns.e2.collision_once)
    groups: dict[str, list[str]] = {"overall": [s.episode_id for s in specs]}
    for s in specs:
        groups.setdefault(s.perturbation, []).append(s.episode_id)
    per_group: dict[str, Any] = {}
    for name, ids in groups.items():
        keep = set(ids)
        aligned = align(e for e in episodes if e.episode in keep)
        e1_eps = [e for e in aligned.by_rollout.get(cfg.returns.e1.rollout, ()) if e.steps]
        e1 = e1_metrics(e1_eps, cfg.returns.e1)
        e2 = e2_metrics(aligned.triples, e2cfg)
        per_group[name] = {
            "episodes": len(ids),
            "E1": {"frames": e1.frames.as_dict(), "episodes": e1.episodes.as_dict(), "counts": e1.counts.as_dict()},
            "E2": {"frames": e2.frames.as_dict(), "episodes": e2.episodes.as_dict()},
        }
    rows = []
    aligned = align(episodes)
    for p, m, g in aligned.triples:
        meta = p.meta
        rows.append(
            {
                "episode": p.episode,
                "scenario": meta.get("scenario"),
                "perturbation": meta.get("perturbation"),
                "level": meta.get("level"),
                "collided": {e.rollout: any(s.collision for s in e.steps) for e in (p, m, g)},
                "running_frames": {e.rollout: sum(1 for s in e.steps if s.running) for e in (p, m, g)},
                "first_alarm": {e.rollout: e.meta.get("first_alarm") for e in (p, m, g)},
                "first_stop": {e.rollout: e.meta.get("first_stop") for e in (p, m, g)},
                "end": {e.rollout: e.end_reason for e in (p, m, g)},
            }
        )
    return {
        "format": "perception_safety.episodes/1",
        "note": "SG/RH/AC per eq. 7-9 of the SG/RH/AC paper; E1 eq. 14-15 on the rollout named in e1_rollout, "
        "E2 eq. 16-17 (frames: every t; episodes: returns from x_0). hazard_f = SG + RH (eq. 6).",
        "e1_rollout": cfg.returns.e1.rollout,
        "horizon": e2cfg.horizon,
        "metrics": per_group,
        "episodes": rows,
    }
