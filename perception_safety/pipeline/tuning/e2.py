"""E2 per operating point on the builtin simulator (``tune-monitor --episodes``): the sweep of the ``episodes``
section re-run with each point's monitors into its own folder (``DIR/e2/point-NNN``), so a finished point is
reused and an interrupted one resumed (`sim.sweep.run_sweep` with ``resume``); SG/RH/AC of scheme E2 (the SG/RH/AC
paper, eq. 16-17) with the episode as the unit (returns from each episode's first frame, exact bounds)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perception_safety.evaluation.returns import E2Config, align, e2_metrics
from perception_safety.evaluation.returns.intervals import returns_intervals
from perception_safety.io.episode_log import read_episode_log
from perception_safety.pipeline.tuning.grid import OperatingPoint
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.sweep import LOGS_DIR, plan_episodes, run_sweep


def e2_figures(episodes_cfg: EpisodesConfig, points: Sequence[OperatingPoint], out: Path, alpha: float,
               progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One E2 figure set per point, in point order (each point's sweep cached in its folder)."""
    rows = []
    specs = plan_episodes(episodes_cfg)
    horizon = max((s.scenario.frames for s in specs), default=2)
    e2cfg = E2Config(horizon=episodes_cfg.returns.e2.horizon or horizon,
                     collision_once=episodes_cfg.returns.e2.collision_once)
    for p in points:
        folder = out / "e2" / f"point-{p.index:03d}"
        run_sweep(episodes_cfg, folder, monitors=p.monitors, resume=True)
        logs = sorted((folder / LOGS_DIR).glob("*.jsonl"))
        eps = [e for log in logs for e in read_episode_log(log)]
        res = e2_metrics(align(eps).triples, e2cfg)
        iv = returns_intervals([e.episode_returns for e in res.per_episode], "episodes", alpha)
        m = res.episodes
        row: dict[str, Any] = {"episodes": len(res.per_episode), "folder": str(folder)}
        for key, value in (("SG", m.sg), ("RH", m.rh), ("AC", m.ac)):
            row[key] = {"value": value, "lower": iv[f"{key}_lower"], "upper": iv[f"{key}_upper"]}
        rows.append(row)
        if progress:
            progress(f"E2 at {p.label}: {len(res.per_episode)} episodes")
    return rows
