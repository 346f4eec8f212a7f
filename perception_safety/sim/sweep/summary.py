"""The sweep's summary: SG/RH/AC for E1 and E2, overall and per perturbation, from the episode logs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perception_safety.evaluation.returns import E2Config, align, e1_metrics, e2_metrics
from perception_safety.io.episode_log import ROLLOUTS, Episode, EpisodeLogError, EpisodeLogReport, read_episode_log
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.sweep.planning import EpisodeRunError, EpisodeSpec
from perception_safety.sim.sweep.recording import episode_log_path

RESULTS_FILE = "results.json"


def _whole_log(path: Path) -> list[Episode]:
    """The episodes of one finished episode's log, which the recorder wrote whole (atomically): a torn line, an
    unended episode or a missing rollout means the file was damaged afterwards; `--resume` must not count it."""
    report = EpisodeLogReport()
    try:
        episodes = read_episode_log(path, report)
    except EpisodeLogError as exc:
        raise EpisodeRunError(f"damaged episode log: {exc}; delete {path} and re-run with --resume") from exc
    problems = report.torn_lines + report.incomplete
    rollouts = sorted({e.rollout for e in episodes})
    if not problems and len(rollouts) != len(ROLLOUTS):
        problems = [f"{path}: rollouts {rollouts}, expected {list(ROLLOUTS)}"]
    if problems:
        raise EpisodeRunError(f"damaged episode log: {problems[0]}; delete {path} and re-run with --resume")
    return episodes


def summarize(out: Path, specs: Iterable[EpisodeSpec], cfg: EpisodesConfig) -> dict[str, Any]:
    """SG/RH/AC for E1 and E2, overall and per perturbation, from the episode logs in ``out``."""
    specs = list(specs)
    episodes = []
    for spec in specs:
        path = episode_log_path(out, spec)
        if not path.exists():
            raise EpisodeRunError(f"{path}: episode log missing; re-run with --resume")
        episodes.extend(_whole_log(path))
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
