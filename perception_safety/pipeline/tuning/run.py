"""The tuning job in order: points, one pass, figures per point, selection, outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perception_safety.io.bag_inputs import MONITORED, PERFECT, select_bags
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.bag_pass import MapInput
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.pipeline.tuning.checks import check_images, check_speeds, sweep_warnings
from perception_safety.pipeline.tuning.grid import TuningError, operating_points
from perception_safety.pipeline.tuning.metrics import e1_figures, system_figures
from perception_safety.pipeline.tuning.report import tradeoff_figure, write_outputs
from perception_safety.pipeline.tuning.select import choose, pareto_front, parse_requirement
from perception_safety.pipeline.tuning.sweep import sweep_inputs

FORMAT = "perception_safety.tuning/1"


@dataclass(frozen=True)
class TuningRequest:
    """What to sweep and how to choose."""

    inputs: Sequence[str]
    params: Sequence[str]
    values: Sequence[str]
    requirements: Sequence[str] = ()
    objective: str = "availability"
    speed: int | None = None
    initial_speed: int | None = None
    alpha: float = 0.05
    episodes: Any = None
    """An `EpisodesConfig`: also E2 per point by re-running the builtin simulator's sweep (``--episodes``)."""


def base_monitors(data: Mapping[str, Any], base_dir: Path) -> MonitorsConfig:
    """The monitors a sweep starts from: the config's ``monitors`` section, else the file its
    ``episodes.monitors_file`` names (relative to ``base_dir``), else the defaults."""
    from perception_safety.io.config import load_model, model_from_mapping

    if "monitors" in data:
        return model_from_mapping(data["monitors"] or {}, MonitorsConfig, "config", "monitors")
    episodes = data.get("episodes")
    ref = episodes.get("monitors_file") if isinstance(episodes, Mapping) else None
    if ref:
        return load_model(base_dir / str(ref), MonitorsConfig, section="monitors")
    return MonitorsConfig()


def _perception_inputs(inputs: Sequence[str], notes: list[str]) -> list[MapInput]:
    found = select_bags(inputs)
    used = []
    skipped = [b for b in found if b.excluded]
    if skipped:
        notes.append(f"{len(skipped)} monitored or perfect-perception rollout(s) found in the folders were not read "
                     "(the figures compare f with f + monitor on f's own frames)")
    for b in found:
        if b.excluded:
            continue
        if b.role in (MONITORED, PERFECT):
            notes.append(f"{b.path}: a {b.role} rollout is not a perception rollout (f): not read (the monitor's "
                         "figures compare f with f + monitor on f's own frames)")
        else:
            used.append(MapInput(str(b.path), "bag", b.conditions, b.messages))
    if not used:
        raise TuningError("no perception-rollout bag among the inputs (monitored and perfect-perception rollouts "
                          "are not swept)")
    return used


def run_tuning(req: TuningRequest, cfg: EvaluateConfig, base: MonitorsConfig, out: Path,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Sweep, compute, choose, write; returns the ``tuning.json`` document."""
    requirements = [parse_requirement(r) for r in req.requirements]
    points = operating_points(base, req.params, req.values)
    check_speeds(req.speed, req.initial_speed, cfg.verification)
    notes: list[str] = []
    inputs = _perception_inputs(req.inputs, notes)
    episodes, report = sweep_inputs(inputs, cfg.bags.topics, cfg.bags.tolerance_ns, points, cfg.returns.e1, progress)
    if not any(e.tau for e in episodes):
        raise TuningError("the inputs hold no frame")
    warnings = check_images(req.params, episodes)
    per_interval = req.alpha / (len(points) * max(1, len(requirements)))
    rows = []
    for p in points:
        e1 = e1_figures(episodes, p.index, per_interval)
        system = system_figures(episodes, p.index, cfg.confusion, cfg.verification, per_interval, req.speed,
                                req.initial_speed)
        rows.append({"index": p.index, "label": p.label, "params": dict(p.values), "e1": e1, "system": system})
    if req.episodes is not None:
        from perception_safety.pipeline.tuning.e2 import e2_figures

        for row, e2 in zip(rows, e2_figures(req.episodes, points, out, per_interval, progress), strict=True):
            row["e2"] = e2
    else:
        notes.append("E2 (re-running the monitored rollouts per point) not computed: pass --episodes for the builtin "
                     "simulator")
    front = pareto_front(rows)
    selection = choose(rows, requirements, req.objective)
    warnings += sweep_warnings(episodes, rows, selection)
    n_frames = sum(len(e.tau) for e in episodes)
    if len(episodes) < 10:
        notes.append(f"only {len(episodes)} episodes (independent units): the intervals are wide and a requirement "
                     "met on fewer than 10 episodes rests on little evidence")
    notes += [line for line in report.summary_lines()[1:]]
    notes += [
        "E1 (classification form, eq. 10-15): tau = a false positive or false negative of the frame's detections "
        f"(IoU {cfg.returns.e1.iou_threshold:g}, classes {cfg.returns.e1.classes or 'all'}), alarm = the runtime "
        "monitor m_f of the point; averaged over frames, episodes as clusters (Korn-Graubard)",
        "SG_sys/RH_sys/AC_sys: the car-pedestrian chains f, f+m and f* from the confusion counts split by the "
        "point's verdicts, with the assumptions listed in docs/verification.md (monitor in the loop)",
    ]
    doc = {
        "format": FORMAT,
        "params": list(req.params),
        "values": list(req.values),
        "level": 1 - req.alpha,
        "alpha_per_interval": per_interval,
        "simultaneous": f"Bonferroni over {len(points)} points x {max(1, len(requirements))} requirement(s)",
        "frames": n_frames,
        "episodes": len(episodes),
        "inputs": [i.path for i in inputs],
        "rows": rows,
        "pareto_front": front,
        "selection": selection,
        "warnings": warnings,
        "notes": notes,
        "complete": True,
    }
    tuned = points[selection["chosen"]].monitors if selection.get("chosen") is not None else None
    write_outputs(out, doc, tradeoff_figure(rows, front, selection.get("chosen"), 1 - req.alpha), tuned)
    return doc
