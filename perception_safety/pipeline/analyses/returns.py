"""Evaluate step: SG/RH/AC under E1 and E2 from episode logs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric


def run(ev: Evaluation, episodes: list[Any], notes: list[str], cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.evaluation.returns import logged_config, returns_report

    sec = ev.report.section("Safety Gain / Residual Hazard / Availability Cost")
    sec.text(
        "SG = mean(S_fm - S_f), RH = mean(S_f* - S_fm), AC = mean(M_f - M_fm) (eq. 7-9) over the three aligned "
        "rollouts of each scenario: perception f, f with the monitor (fm) and ground truth f*. E1 'detect ML "
        "errors' (eq. 14-15), E2 'prevent accidents' (eq. 16-17). SG + RH is the hazard of f (eq. 6)."
    )
    for n in notes:
        sec.text(n, "warn")
    rcfg = cfg.returns
    logged = logged_config(episodes)
    if "returns" not in cfg.model_fields_set and logged is not None:
        rcfg = logged
        sec.text("E1/E2 settings: the ones the episode runner recorded in the logs (the config has no `returns`).")
    doc = returns_report(episodes, rcfg)
    for w in doc.get("warnings", []):
        ev.warn("returns", str(w), "returns_explained")
    ev.results["returns"] = doc
    (out / "returns.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    rows = []
    for scheme in ("E1", "E2"):
        block = doc.get(scheme)
        if not isinstance(block, dict):
            continue
        for avg in ("frames", "episodes"):
            m = block[avg]
            rows.append([scheme, avg, m["SG"], m["RH"], m["AC"], m["hazard_f"], m["n"]])
            if avg == "frames":
                for key in ("SG", "RH", "AC"):
                    ev.report.summary.append(Metric(f"{key} ({scheme}, per frame)", m[key], "", f"n = {m['n']} frames"))
    sec.table(["scheme", "averaged over", "SG", "RH", "AC", "hazard of f", "n"], rows)
    for n in doc.get("notes", []):
        sec.text(str(n), "note")




def read_episodes(paths: Sequence[str | Path]) -> tuple[list[Any], list[str]]:
    from perception_safety.io.episode_log import EpisodeLogReport, read_episode_log

    episodes: list[Any] = []
    notes: list[str] = []
    for path in paths:
        rep = EpisodeLogReport()
        episodes += read_episode_log(path, rep)
        notes += [f"{path}: {n}" for n in rep.messages]
    return episodes, notes
