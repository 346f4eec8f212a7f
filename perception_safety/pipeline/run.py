"""The whole ``evaluate`` job: find bags, map/reduce, run each analysis, write results.json and report.html."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from perception_safety.io.bag import find_bags
from perception_safety.pipeline.analyses import bbsl, confusion, pcd, quality, returns, verification
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import NothingUsableError, map_bags, reduce_partials
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Report

RESULTS_FORMAT = "perception_safety.results/1"


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
    jobs: int = 1,
    console: Console | None = None,
    episode_logs: Sequence[str | Path] = (),
) -> Evaluation:
    """Run everything the config asks for on the bags found in ``inputs``; writes results and report."""
    console = console or Console(stderr=True)
    out.mkdir(parents=True, exist_ok=True)
    bags = find_bags(inputs)
    if not bags:
        raise NothingUsableError(f"no rosbag2 bag found in {', '.join(map(str, inputs))}")
    t0 = time.perf_counter()
    with progress_bar(console) as bar:
        task = bar.add_task("reading bags", total=len(bags))
        partials = map_bags(bags, cfg, out / "partials", jobs, on_done=lambda _: bar.advance(task))
    red = reduce_partials(partials, cfg)
    t1 = time.perf_counter()
    if red.frames == 0:
        lines = [f"  {b}: {r}" for b, r in red.read_reports.items()]
        raise NothingUsableError("no usable frame in any input:\n" + "\n".join(lines))
    report = Report("perception_safety evaluation", f"{len(bags)} bag(s), {red.frames} frames")
    report.inputs = [str(b) for b in bags]
    report.config_text = config_text
    ev = Evaluation(
        results={
            "format": RESULTS_FORMAT,
            "inputs": report.inputs,
            "frames": red.frames,
            "data_quality": red.read_reports,
        },
        report=report,
    )
    ev.timings["read_and_map_s"] = t1 - t0
    analyses = cfg.evaluate.analyses
    all_steps = (("confusion", confusion.run), ("pcd", pcd.run), ("verification", verification.run), ("bbsl", bbsl.run))
    steps = [(a, f) for a, f in all_steps if a in analyses]
    episodes, notes = returns.read_episodes(episode_logs) if "returns" in analyses else ([], [])
    if episodes:
        steps.append(("returns", lambda ev, red, cfg, out: returns.run(ev, episodes, notes, cfg, out)))
    with progress_bar(console) as bar:
        task = bar.add_task("analyses", total=len(steps))
        for name, step in steps:
            bar.update(task, description=f"analysis: {name}")
            ts = time.perf_counter()
            step(ev, red, cfg, out)
            ev.timings[f"{name}_s"] = time.perf_counter() - ts
            bar.advance(task)
    quality.run(ev, red)
    ev.results["summary"] = [m.__dict__ for m in report.summary]
    ev.results["warnings"] = ev.warnings
    (out / "results.json").write_text(json.dumps(ev.results, indent=1) + "\n", encoding="utf-8")
    report.write(out / "report.html")
    return ev


__all__ = ["Evaluation", "progress_bar", "run_evaluate"]
