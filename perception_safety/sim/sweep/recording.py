"""Recording an episode: its log (one record set per rollout) and its rosbag2 bags, written under temporary
names and renamed when complete, so that a folder only ever holds whole episodes (what ``--resume`` relies on)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from perception_safety.evaluation.returns import LOGGED_CONFIG_KEY
from perception_safety.io.episode_log import EpisodeLogWriter
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.sweep.planning import EpisodeRunError, EpisodeSpec
from perception_safety.sim.sweep.rollout import Rollout

LOGS_DIR = "logs"
BAGS_DIR = "bags"


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


def episode_meta(spec: EpisodeSpec, backend: str, roll: Rollout) -> dict[str, Any]:
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
    out: Path, spec: EpisodeSpec, rollouts: dict[str, Rollout], cfg: EpisodesConfig, backend: str
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
