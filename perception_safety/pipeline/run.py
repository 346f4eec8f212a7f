"""The whole ``evaluate`` job: find bags, map/reduce, run each analysis, write results.json and report.html."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from perception_safety.io.bag_inputs import ROLE_TEXT, BagInput, select_bags, used
from perception_safety.pipeline.analyses import (
    bbsl,
    breakdowns,
    confusion,
    detection_ap,
    evidence,
    monitor_loop,
    pcd,
    quality,
    requirements,
    returns,
    verification,
)
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.bag_pass import MapInput
from perception_safety.pipeline.collector import frozen_for_run
from perception_safety.pipeline.evaluate import NothingUsableError, map_bags, reduce_partials
from perception_safety.pipeline.evaluate_config import EvaluateConfig, check_requirement_names
from perception_safety.pipeline.provenance import HashMode, header_lines, provenance
from perception_safety.pipeline.run_state import (
    REPORT_FILE,
    RESULTS_FILE,
    RESULTS_FORMAT,
    evaluation_run,
    finished,
)
from perception_safety.report.html import Report
from perception_safety.safe_io import write_text


def progress_bar(console: Console) -> Progress:
    """The progress bar used for every long step (count, bar, elapsed, ETA)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def run_evaluate(
    inputs: Sequence[str | Path],
    cfg: EvaluateConfig,
    config_text: str,
    out: Path,
    jobs: int | None = None,
    console: Console | None = None,
    episode_logs: Sequence[str | Path] = (),
    include_perfect: bool = False,
    hash_mode: HashMode = "metadata",
    include_monitored: bool = False,
    run_id: str | None = None,
) -> Evaluation:
    """Run everything the config asks for on the bags found in ``inputs``; writes results and report.

    OUT belongs to one run (`run_state`): ``run_id`` of a run the caller started, else a new one; results.json
    gets ``complete: true`` last, and a failure marks it failed instead of leaving the previous run's outputs.

    Perfect-perception (f*) and monitored (f+m) bags found in a folder are left out unless ``include_perfect`` /
    ``include_monitored`` (io.bag_inputs).
    The map runs on ``cfg.executor`` (``jobs``, when given, overrides its job count); a bag that cannot be read
    is reported in the data-quality section and the rest are evaluated.
    """
    with evaluation_run(out, run_id) as rid, frozen_for_run():  # the map's survivors out of the collector's reach
        return _evaluate(inputs, cfg, config_text, out, jobs, console, episode_logs, include_perfect, hash_mode,
                         include_monitored, rid)


def _evaluate(
    inputs: Sequence[str | Path],
    cfg: EvaluateConfig,
    config_text: str,
    out: Path,
    jobs: int | None,
    console: Console | None,
    episode_logs: Sequence[str | Path],
    include_perfect: bool,
    hash_mode: HashMode,
    include_monitored: bool,
    run_id: str,
) -> Evaluation:
    console = console or Console(stderr=True)
    check_requirement_names(cfg, "config")
    if cfg.tuning is not None or cfg.model_check is not None:
        from perception_safety.pipeline.analyses.tuning import check_sections

        check_sections(cfg, config_text)
    if jobs is not None:
        cfg = cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"jobs": jobs})})
    out.mkdir(parents=True, exist_ok=True)
    clock = StepClock()
    found = select_bags(inputs, include_perfect, include_monitored)  # every metadata.yaml parsed here, once
    bags = used(found)
    if not bags:
        extra = f" ({len(found)} excluded: {found[0].excluded})" if found else ""
        raise NothingUsableError(f"no rosbag2 bag or JSON Lines dataset found in {', '.join(map(str, inputs))}{extra}")
    clock.lap("find_inputs")
    map_inputs = [MapInput(str(b.path), b.kind, dict(b.conditions), b.messages, b.topics) for b in found
                  if not b.excluded]
    with progress_bar(console) as bar:
        task = bar.add_task("reading inputs", total=len(bags))
        mapped = map_bags(map_inputs, cfg, out / "partials", on_done=lambda _: bar.advance(task))
    clock.lap("read_and_map")
    red = reduce_partials(mapped.partials, cfg)
    red.failed = mapped.failed
    clock.lap("reduce")
    if red.frames == 0:
        lines = [f"  {b}: {r}" for b, r in red.read_reports.items()]
        lines += [f"  {b}: not readable: {reason}" for b, reason in red.failed.items()]
        raise NothingUsableError("no usable frame in any input:\n" + "\n".join(lines))
    read = [b for b in found if not b.excluded]
    report = Report("perception_safety evaluation", inputs_heading(red.frames, read, len(red.failed)))
    prov = provenance(config_text, found, episode_logs, hash_mode)
    report.header = header_lines(prov)
    report.input_header = ["input", "role", "sha256 (first 16)", "hashed", "conditions"]
    report.inputs = [
        [str(b.path), b.describe(), h["sha256"][:16], h["hashed"], _conditions_text(b)]
        for b, h in zip(found, prov["inputs"], strict=True)
    ]
    report.inputs += [[str(e["path"]), "episode log", e["sha256"][:16], e["hashed"], ""] for e in prov["episode_logs"]]
    report.config_text = config_text
    ev = Evaluation(
        results={
            "format": RESULTS_FORMAT,
            "provenance": prov,
            "inputs": [str(b) for b in bags],
            "config": cfg.model_dump(mode="json", exclude={"executor", "base_dir"}),
            "input_roles": [
                {"path": str(b.path), "role": b.role, "named": b.named, "excluded": b.excluded or None,
                 "conditions": dict(b.conditions)}
                for b in found
            ],
            "frames": red.frames,
            "data_quality": quality.data_quality(bags, red),
        },
        report=report,
    )
    warn_about_inputs(ev, found)
    with_position, objects = red.positions
    if cfg.confusion.matching == "centre_distance" and with_position < objects:
        ev.warn("confusion", f"confusion.matching: centre_distance, but {objects - with_position} of {objects} objects "
                "carry no ego-frame position (image boxes in pixels): their centres are compared in pixels against "
                f"centre_distance_m = {cfg.confusion.centre_distance_m:g}, which is meaningless; use matching: iou for "
                "image detectors (docs/objects3d.md)", "centre_distance_on_image_boxes")
    clock.lap("provenance")
    analyses = cfg.evaluate.analyses
    if "bbsl" in analyses and not cfg.image_boxes:
        ev.warn("bbsl", "BBSL testing skipped: 3D object lists (confusion.matching: centre_distance) carry "
                "bird's-eye-view footprints in metres, not image boxes, so the image-region specs do not apply.",
                "bbsl_not_for_3d")
        analyses = [a for a in analyses if a != "bbsl"]
    all_steps = (
        ("confusion", confusion.run),
        ("detection_ap", detection_ap.run),
        ("pcd", pcd.run),
        ("verification", verification.run),
        ("bbsl", bbsl.run),
    )
    steps = [(a, f) for a, f in all_steps if a in analyses]
    if cfg.evaluate.breakdowns and {"confusion", "pcd"} & set(analyses):
        steps.append(("breakdowns", breakdowns.run))
    episodes, notes = returns.read_episodes(episode_logs) if "returns" in analyses else ([], [])
    if episodes:
        steps.append(("returns", lambda ev, red, cfg, out: returns.run(ev, episodes, notes, cfg, out)))
    if cfg.tuning is not None:
        from perception_safety.pipeline.analyses.tuning import run_tuning_step

        steps.append(("tuning", lambda ev, red, cfg, out: run_tuning_step(ev, cfg, config_text, out,
                                                                                      [str(b) for b in bags])))
    if cfg.model_check is not None:
        from perception_safety.pipeline.analyses.tuning import run_model_check_step

        steps.append(("model_check", lambda ev, red, cfg, out: run_model_check_step(ev, red, cfg, config_text, out)))
    if "verification" in analyses:  # after returns: its table puts the empirical E1/E2 beside the model's
        steps.append(("monitor_loop", lambda ev, red, cfg, out: monitor_loop.run(ev, red, cfg, out, episodes)))
    clock.lap("episode_logs")
    with progress_bar(console) as bar:
        task = bar.add_task("analyses", total=len(steps))
        for name, step in steps:
            bar.update(task, description=f"analysis: {name}")
            clock.lap()
            step(ev, red, cfg, out)
            clock.lap(name)
            bar.advance(task)
    clock.lap()
    pics = evidence.pictures(ev, red, cfg)
    clock.lap("thumbnails")
    evidence.run(ev, red, cfg, out, pics)
    clock.lap("evidence")
    quality.run(ev, red)
    clock.lap("data_quality")
    requirements.run(ev, cfg)
    clock.lap("requirements")
    evidence.first_screen(ev, red, cfg, pics)
    clock.lap("first_screen")
    ev.results["summary"] = [m.__dict__ for m in report.summary]
    ev.results["warnings"] = ev.warnings
    report.write(out / REPORT_FILE)
    clock.lap("report")
    ev.timings.update(clock.seconds)
    ev.results["timings"] = timings_block(clock)
    ev.results = finished(ev.results, run_id)
    write_text(out / RESULTS_FILE, json.dumps(ev.results, indent=1) + "\n")  # last: marks the run complete
    return ev


class StepClock:
    """Wall-clock and CPU seconds per named step (`lap` closes the step running since the previous lap).

    CPU is this process's (and its finished workers'): on a shared machine the wall clock measures the load too.
    """

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.cpu_start = self.cpu_last = _cpu_seconds()
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def lap(self, name: str | None = None) -> None:
        now, cpu = time.perf_counter(), _cpu_seconds()
        if name is not None:
            self.seconds[f"{name}_s"] = self.seconds.get(f"{name}_s", 0.0) + now - self.last
            self.cpu[f"{name}_s"] = self.cpu.get(f"{name}_s", 0.0) + cpu - self.cpu_last
        self.last, self.cpu_last = now, cpu

    @property
    def total(self) -> float:
        return time.perf_counter() - self.start

    @property
    def total_cpu(self) -> float:
        return _cpu_seconds() - self.cpu_start


def _cpu_seconds() -> float:
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timings_block(clock: StepClock) -> dict[str, Any]:
    """``results.json["timings"]``: wall-clock seconds per step and in all, and the CPU seconds of each (they change
    from run to run)."""
    steps = {k: round(v, 4) for k, v in clock.seconds.items()}
    cpu = {k: round(v, 4) for k, v in clock.cpu.items()}
    return {**steps, "total_s": round(clock.total, 4), "cpu": {**cpu, "total_s": round(clock.total_cpu, 4)},
            "note": "wall-clock and CPU seconds (this process and its workers); differ from run to run"}


def timings_lines(timings: dict[str, Any]) -> list[str]:
    """The console table of `--timings`: one line per step, wall clock with its share of the total, and CPU."""
    total = float(timings.get("total_s", 0.0)) or 1.0
    cpu = timings.get("cpu", {})
    steps = [(k[:-2], float(v), cpu.get(k)) for k, v in timings.items() if k.endswith("_s") and k != "total_s"]
    width = max((len(k) for k, _, _ in steps), default=5)
    head = f"{'step':<{width}}  {'wall':>10}  {'share':>7}  {'CPU':>10}"
    lines = [
        f"{k:<{width}}  {v:8.3f} s  {100 * v / total:5.1f} %  " + (f"{c:8.3f} s" if c is not None else "")
        for k, v, c in steps
    ]
    tail = f"{'total':<{width}}  {total:8.3f} s  {'':>7}  " + (f"{cpu['total_s']:8.3f} s" if "total_s" in cpu else "")
    return [head, *lines, tail]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def inputs_heading(frames: int, read: Sequence[BagInput], unreadable: int) -> str:
    """``50 frames from 2 of 5 bags; 3 unreadable`` (bags and datasets by kind): a run some of whose inputs
    failed says so in its heading (report subtitle and console title)."""
    n_data = sum(b.is_dataset for b in read)
    kinds = ([_count(len(read) - n_data, "bag")] if len(read) > n_data else []) + (
        [_count(n_data, "dataset")] if n_data else [])
    what = " and ".join(kinds)
    if not unreadable:
        return f"{frames} frames from {what}"
    return f"{frames} frames from {len(read) - unreadable} of {what}; {unreadable} unreadable"


def _conditions_text(b: BagInput) -> str:
    return ", ".join(f"{k}={v}" for k, v in b.conditions.items() if k != "rollout")


def dataset_has_episodes(ev: Evaluation, b: BagInput) -> bool:
    """Whether the dataset ``b`` named any episode (its data-quality entry counts them)."""
    return bool(ev.results["data_quality"].get(str(b.path), {}).get("episodes"))


def warn_about_inputs(ev: Evaluation, found: Sequence[BagInput]) -> None:
    """Name every input whose role changes what the numbers mean (issue: f* bags silently inflating recall)."""
    for role, code, why, flag in (
        ("ground_truth", "perfect_perception_excluded", "their detections are the ground truth",
         "--include-perfect-perception"),
        ("monitored", "monitored_excluded", "they repeat the perception rollouts' frames until the monitor intervenes",
         "--include-monitored"),
    ):  # fmt: skip
        excluded = [b for b in found if b.excluded and b.role == role]
        if excluded:
            ev.warn(
                "inputs",
                f"{len(excluded)} {ROLE_TEXT[role]} bag(s) found in the input folders were NOT read "
                f"(e.g. {excluded[0].path}); {why}. Pass {flag} to read them anyway.",
                code,
            )
    perfect = [b for b in found if b.role == "ground_truth" and not b.excluded]
    if perfect:
        ev.warn(
            "inputs",
            f"{len(perfect)} perfect-perception (f*) bag(s) are read (e.g. {perfect[0].path}): every metric mixes in "
            "detections that equal the ground truth and overstates the detector.",
            "perfect_perception_included",
        )
    for b in found:
        if b.is_dataset and not b.excluded and not dataset_has_episodes(ev, b):
            ev.warn(
                "inputs",
                f"{b.path}: no line carries an 'episode' key, so each frame is its own sampling unit (right for "
                "independent images; for video sequences add the sequence as 'episode', or intervals are too narrow).",
                "dataset_without_episodes",
            )
    roles = {b.role for b in found if not b.excluded}
    if {"perception", "monitored"} <= roles:
        ev.warn(
            "inputs",
            "both perception (f) and monitored (f+m) rollout bags are read: the rollouts share every frame up to the "
            "first monitor alarm, so those frames count twice. Name only the .../perception bags to evaluate the "
            f"detector once ({ROLE_TEXT['monitored']} bags are listed under 'Configuration and inputs').",
            "rollouts_overlap",
        )


__all__ = ["Evaluation", "StepClock", "inputs_heading", "progress_bar", "run_evaluate", "timings_lines"]
