"""Evaluate step: SG/RH/AC under E1 and E2 from episode logs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import write_text


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
    doc = returns_report(episodes, rcfg, cfg.confusion.alpha)
    for w in doc.get("warnings", []):
        ev.warn("returns", str(w), "returns_explained")
    ev.results["returns"] = doc
    write_text(out / "returns.json", json.dumps(doc, indent=1))
    rows = []
    level = f"{100 * (1 - cfg.confusion.alpha):g} %"
    for scheme in ("E1", "E2"):
        block = doc.get(scheme)
        if not isinstance(block, dict):
            continue
        for avg in ("frames", "episodes"):
            m = block[avg]
            cells = [_with_interval(m, key) for key in ("SG", "RH", "AC", "hazard_f")]
            rows.append([scheme, avg, *cells, m["n"], m.get("episodes", "–")])
            if avg == "frames":
                for key in ("SG", "RH", "AC"):
                    band = f"{level} [{m[key + '_lower']:.3g}, {m[key + '_upper']:.3g}]" if key + "_lower" in m else ""
                    note = f"n = {m['n']} frames in {m.get('episodes', '?')} episodes {band}".strip()
                    ev.report.summary.append(Metric(f"{key} ({scheme}, per frame)", m[key], "", note))
    sec.table(
        ["scheme", "averaged over", "SG", "RH", "AC", "hazard of f", "n", "episodes"],
        rows,
        f"Estimate [{level} interval] with the episode as the independent unit: per-episode values with exact "
        "Clopper-Pearson bounds (averaged over episodes), or frames clustered by episode with Korn-Graubard bounds "
        "(averaged over frames); each metric's positive and negative parts at alpha/2 (Bonferroni). Requirements "
        "on returns use these bounds (bound: upper for RH).",
    )
    if any(
        isinstance(doc.get(s), dict) and doc[s]["episodes"].get("episodes", 99) < cfg.confusion.min_clusters
        for s in ("E1", "E2")
    ):
        ev.warn(
            "returns",
            f"SG/RH/AC rest on fewer than {cfg.confusion.min_clusters} episodes: their intervals are wide and a "
            "requirement on them is INCONCLUSIVE (never PASS) unless the estimate itself misses it",
            "few_episodes",
        )
    by_condition(ev, sec, episodes, rcfg, cfg.evaluate.breakdowns, out)
    for n in doc.get("notes", []):
        sec.text(str(n), "note")


def _with_interval(m: dict[str, Any], key: str) -> str:
    """``0.143 [-0.47, 0.64]`` (the estimate alone when no interval was computed)."""
    if f"{key}_lower" not in m:
        return f"{m[key]:.4g}"
    return f"{m[key]:.3g} [{m[key + '_lower']:.3g}, {m[key + '_upper']:.3g}]"


def read_episodes(paths: Sequence[str | Path]) -> tuple[list[Any], list[str]]:
    from perception_safety.io.episode_log import EpisodeLogReport, read_episode_log

    episodes: list[Any] = []
    notes: list[str] = []
    for path in paths:
        rep = EpisodeLogReport()
        episodes += read_episode_log(path, rep)
        notes += [f"{path}: {n}" for n in rep.messages]
    return episodes, notes


def episode_value(ep: Any, attr: str) -> str:
    """An episode's value of a breakdown attribute: its id for 'episode', else its begin meta, else 'unknown'."""
    if attr == "episode":
        return str(ep.episode)
    return str(ep.meta.get(attr, "unknown"))


def by_condition(
    ev: Evaluation, sec: Any, episodes: list[Any], rcfg: Any, attributes: Sequence[str], out: Path
) -> None:
    """SG/RH/AC per value of each breakdown attribute found in the episode meta, and every episode's outcome."""
    from perception_safety.evaluation.returns import ReturnsError, align, returns_report
    from perception_safety.report.breakdown_plots import returns_bars

    doc: dict[str, Any] = {}
    for attr in attributes:
        values = list(dict.fromkeys(episode_value(ep, attr) for ep in episodes))
        if values == ["unknown"]:
            continue
        per: dict[str, Any] = {}
        rows = []
        for value in values:
            subset = [ep for ep in episodes if episode_value(ep, attr) == value]
            try:
                rep = returns_report(subset, rcfg)
            except ReturnsError as exc:
                per[value] = {"error": str(exc)}
                rows.append([value, len({e.episode for e in subset}), *(["not computed"] * 6)])
                continue
            per[value] = {k: rep[k]["frames"] for k in ("E1", "E2") if k in rep}
            cells = [per[value].get(k, {}).get(m, "n/a") for k in ("E1", "E2") for m in ("SG", "RH", "AC")]
            rows.append([value, len({e.episode for e in subset}), *cells])
        sec.table(
            [attr, "episodes (n)", "E1 SG", "E1 RH", "E1 AC", "E2 SG", "E2 RH", "E2 AC"],
            rows,
            f"SG / RH / AC per {attr} (averaged over frames)",
        )
        svg = returns_bars(per, attr, out / f"returns_by_{attr}.svg")
        sec.figure(svg.read_text(encoding="utf-8"), f"SG / RH / AC per {attr}")
        doc[attr] = per
    triples = align(episodes).triples
    outcomes = []
    for p, m, g in triples:
        first_alarm = next((s.t for s in m.steps if s.alarm), None)
        outcomes.append(
            {
                "episode": p.episode,
                "perturbation": p.meta.get("perturbation"),
                "level": p.meta.get("level"),
                "collided": {e.rollout: any(s.collision for s in e.steps) for e in (p, m, g)},
                "first_alarm_fm": first_alarm,
                "end": {e.rollout: e.end_reason for e in (p, m, g)},
            }
        )
    if outcomes:
        yes = {True: "collision", False: "-"}
        sec.table(
            ["episode", "perturbation", "level", "f", "f+m", "f*", "first alarm (f+m, frame)"],
            [
                [
                    o["episode"],
                    o["perturbation"] if o["perturbation"] is not None else "-",
                    o["level"] if o["level"] is not None else "-",
                    yes[o["collided"]["perception"]],
                    yes[o["collided"]["monitored"]],
                    yes[o["collided"]["ground_truth"]],
                    "none" if o["first_alarm_fm"] is None else o["first_alarm_fm"],
                ]
                for o in outcomes
            ],
            "Episode outcomes: collisions of the perception (f), monitored (f+m) and ground-truth (f*) rollouts",
        )
    ev.results["returns"]["by_condition"] = doc
    ev.results["returns"]["episode_outcomes"] = outcomes
