"""The analyses' fixed cost in `evaluate`: CPU seconds of each analysis step on copies of the demo's bags.

The bags (``--copies`` copies of ``DIR/episodes/bags/*/perception``, folders of symlinks, as bench_evaluate.py
makes them) are mapped and reduced once; then every analysis step of the demo config (confusion, detection_ap,
pcd, verification, bbsl, breakdowns, monitor_loop, in `evaluate`'s order) runs on the reduced data, ``--repeat``
times, and the least CPU seconds of each step is kept. With ``--baseline REF`` the same runs are made, in the same
invocation, by the package as it was at git revision REF (``git archive`` into a temporary folder, run in a
subprocess with that folder first on ``PYTHONPATH``), and each step is printed with its ratio to the baseline;
the two runs' ``results.json`` parts of every step are compared (identical, or the largest relative difference).

Usage: python benchmarks/bench_analyses.py --demo /work/demo_out [--copies 16] [--repeat 3] [--baseline main]
       [--steps verification pcd] [--profile verification]   (cProfile of one step, top functions by cumulative time)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
STEPS = ("confusion", "detection_ap", "pcd", "verification", "bbsl", "breakdowns", "monitor_loop")


def cpu() -> float:
    """This process's CPU seconds (the steps run in the driver, no workers)."""
    return time.process_time()


def measure(demo: Path, copies: int, repeat: int, tmp: Path, profile: str | None, steps: tuple[str, ...]) -> dict:
    """Map and reduce once, then every step ``repeat`` times: ``{"cpu": {step: s}, "results": {...}}``."""
    sys.path.insert(0, str(HERE.parent))
    from bench_evaluate import demo_copies

    from perception_safety.pipeline.analyses import (
        bbsl,
        breakdowns,
        confusion,
        detection_ap,
        monitor_loop,
        pcd,
        verification,
    )
    from perception_safety.pipeline.analyses.base import Evaluation
    from perception_safety.pipeline.evaluate import map_bags, reduce_partials
    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.report.html import Report

    runs = {"confusion": confusion.run, "detection_ap": detection_ap.run, "pcd": pcd.run,
            "verification": verification.run, "bbsl": bbsl.run, "breakdowns": breakdowns.run,
            "monitor_loop": lambda ev, red, cfg, out: monitor_loop.run(ev, red, cfg, out, [])}
    bags = demo_copies(demo, copies, tmp)
    cfg, _ = load_evaluate_config(HERE.parents[1] / "config" / "demo.yaml")
    cfg = cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"jobs": 1})})
    mapped = map_bags(bags, cfg, tmp / "partials")
    best: dict[str, float] = {}
    results: dict = {}
    for r in range(repeat):
        fresh_caches()
        red = reduce_partials(mapped.partials, cfg)
        red.failed = mapped.failed
        ev = Evaluation(results={"frames": red.frames}, report=Report("bench", "bench"))
        out = tmp / f"out{r}"
        out.mkdir()
        for name in steps:
            if profile == name and r == 0:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.runcall(runs[name], ev, red, cfg, out)
                pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
                continue
            c = cpu()
            runs[name](ev, red, cfg, out)
            best[name] = min(best.get(name, 1e9), cpu() - c)
        results = {k: v for k, v in ev.results.items() if k != "frames"}
        results["warnings"] = ev.warnings
    results = json.loads(json.dumps(results).replace(str(tmp), "TMP"))  # the output folder differs run to run
    return {"cpu": best, "results": results, "frames": red.frames, "bags": len(bags)}


def fresh_caches() -> None:
    """Every run starts as a new `evaluate` process would: no interval solved, formula parsed or chain structure
    worked out by an earlier repeat (modules a baseline revision lacks are skipped)."""
    import importlib

    caches = {"perception_safety.evaluation.betabinomial": ("_pairs_interval", "cutoff"),
              "perception_safety.verification.specs": ("parsed", "_environment"),
              "perception_safety.verification.bounds": ("_min_max_env",),
              "perception_safety.verification.counted": ("_effective_n",),
              "perception_safety.verification.reach": ("_cached_structure", "reach_form", "_tokens")}
    for module, names in caches.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for name in names:
            cached = getattr(mod, name, None)
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()


def differences(a, b, path: str = "") -> list[tuple[str, float | None]]:
    """Where two JSON documents differ: ``(path, relative difference or None when not numeric)``."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b), key=str)
        return [d for k in keys for d in (differences(a.get(k), b.get(k), f"{path}/{k}") if k in a and k in b
                                          else [(f"{path}/{k}", None)])]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(path, None)]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if a == b:
        return []
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return [(path, abs(a - b) / max(abs(a), abs(b)))]
    return [(path, None)]


def baseline(ref: str, args: argparse.Namespace) -> dict:
    """The same measurement by the package at git revision ``ref`` (a subprocess on its own source tree)."""
    src = Path(tempfile.mkdtemp(prefix="bench_analyses_src_"))
    try:
        archive = subprocess.run(["git", "-C", str(HERE.parents[1]), "archive", ref], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(src)}
        cmd = [sys.executable, str(HERE), "--demo", str(args.demo), "--copies", str(args.copies), "--repeat",
               str(args.repeat), "--steps", *args.steps, "--json"]
        done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(src, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, required=True, help="a `perception-safety demo` output folder (read only)")
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="git revision whose package is measured in the same run (e.g. main)")
    ap.add_argument("--profile", choices=STEPS, help="cProfile this step (first repeat, not timed)")
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS),
                    help="the steps to run, in evaluate's order (a step may read what an earlier one wrote)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline subprocess' output
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_analyses_"))
    try:
        base = baseline(args.baseline, args) if args.baseline else None
        load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
        steps = tuple(s for s in STEPS if s in args.steps)
        now = measure(args.demo, args.copies, args.repeat, tmp, args.profile, steps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(now))
        return
    print(f"{now['bags']} bags ({args.copies} copies of the demo's perception bags, {now['frames']} frames); "
          f"least CPU s of {args.repeat} run(s) per step; load {load} (1/5/15 min) at start")
    head = f"{'step':<14}{'CPU s':>8}"
    label = (args.baseline or "")[:10]
    if base:
        head += f"{f'{label} s':>14}{'ratio':>8}"
    print(head)
    total = total_base = 0.0
    for name in STEPS:
        if name not in now["cpu"]:
            continue
        s = now["cpu"][name]
        total += s
        line = f"{name:<14}{s:8.3f}"
        if base:
            b = base["cpu"][name]
            total_base += b
            line += f"{b:14.3f}{s / b:8.2f}"
        print(line)
    print(f"{'all steps':<14}{total:8.3f}" + (f"{total_base:14.3f}{total / total_base:8.2f}" if base else ""))
    if base:
        print(f"results.json parts vs {label}:")
        for key in sorted(set(base["results"]) | set(now["results"])):
            diff = differences(base["results"].get(key), now["results"].get(key))
            rel = [r for _, r in diff if r is not None]
            text = "identical" if not diff else f"{len(diff)} value(s) differ"
            if rel:
                text += f", largest relative difference {max(rel):.1e}"
            if len(rel) < len(diff):
                text += f", {len(diff) - len(rel)} not numeric, e.g. {next(p for p, r in diff if r is None)}"
            print(f"  {key}: {text}")


if __name__ == "__main__":
    main()
