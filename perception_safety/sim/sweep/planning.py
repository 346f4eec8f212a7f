"""Planning a sweep: which episodes (scenario variant x perturbation x level) with which ids and seeds, and
the fingerprint that ties a folder's finished episodes to the configuration that recorded them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError
from perception_safety.io.config import load_model
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.perturbations import PERTURBATIONS
from perception_safety.safe_io import load_json
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.scenario import ScenarioConfig

CLEAN = "none"
SWEEP_CONFIG_FILE = "sweep_config.json"


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



def check_camera_mount(specs: list[EpisodeSpec], monitors: MonitorsConfig) -> None:
    """`EpisodeRunError` when the stop rule places a ground corridor with a mounting other than the simulated
    camera's (``scenario.camera`` z, pitch_deg, y): the corridor would lie on another part of the road, silently."""
    stop = monitors.stop_region
    if not stop.enabled or stop.corridor is None:
        return
    mount = monitors.camera
    for spec in specs:
        cam = spec.scenario.camera
        given = (mount.height_m, mount.pitch_deg, mount.lateral_offset_m)
        if given != (cam.z, cam.pitch_deg, cam.y):
            raise EpisodeRunError(
                f"monitors.camera (height_m {mount.height_m}, pitch_deg {mount.pitch_deg:g}, lateral_offset_m "
                f"{mount.lateral_offset_m:g}) is not the simulated camera of scenario '{spec.scenario_name}' "
                f"(z {cam.z:g}, pitch_deg {cam.pitch_deg:g}, y {cam.y:g}): the stop rule's ground corridor "
                "(monitors.stop_region.corridor) would be placed on another part of the road; set monitors.camera "
                "to the scenario's camera")


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
        recorded = load_json(path, "sweep configuration", limit=64 * 1024 * 1024, error=EpisodeRunError)
    except EpisodeRunError as exc:
        raise EpisodeRunError(f"{exc}; remove {out} or choose a new --out") from None
    if not isinstance(recorded, dict):
        raise EpisodeRunError(f"{path}: not a sweep configuration (a JSON {type(recorded).__name__}); remove {out} "
                              "or choose a new --out")
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
