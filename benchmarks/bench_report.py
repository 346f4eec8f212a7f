"""The report's fixed cost in `evaluate` (issue 27 target 1): thumbnails and figures, in CPU seconds, each against
its former path and against a bare rosbags read + deserialisation of the same bags' non-image topics, all in one run.

``--copies`` copies of the demo's perception bags (folders of symlinks, as `bench_evaluate.py --demo` makes them)
are evaluated once with the demo config (``--jobs 1``): the CPU seconds of its ``thumbnails``, ``evidence``,
``confusion`` and ``breakdowns`` steps and of every plotting call (timed around the calls). Then, in the same run:
- thumbnails: the report's pictures from the run's partials as they are (each frame sought by its recording window),
  with the windows removed (the former path: each referenced bag's non-image topics read whole) and with the strips
  cut from the former 266 x 200 px windows;
- figures: the same evaluate in two fresh processes on the same copies, one on this checkout (the project's own
  SVG, `report/svg`) and one on ``--old-ref`` (default: the last commit drawing with matplotlib, extracted with
  ``git archive``): the plotting calls' CPU s, the import of the plotting modules (matplotlib's on the old side)
  and the figures' bytes.
The load average is printed with every figure (the machine is shared).

Usage: python benchmarks/bench_report.py [--demo /work/demo_out] [--copies 16] [--repeat 2] [--old-ref REF]
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evaluate import demo_copies, load, read_non_image

FIGURE_CALLS = {
    "perception_safety.report.confusion_plots": ("plot_pages", "plot_rates"),
    "perception_safety.report.breakdown_plots": ("recall_small_multiples", "pcd_small_multiples", "returns_bars"),
    "perception_safety.report.pcd_plots": ("fits_figure", "surfaces_figure"),
    "perception_safety.report.verification_plots": ("plot_satisfaction",),
}
"""The plotting calls the analyses make (looked up on the module at call time, so a wrapper here times them)."""


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed_figures() -> dict[str, float]:
    """Wrap every plotting call of `FIGURE_CALLS`: CPU seconds and call counts accumulate in the returned dict."""
    spent: dict[str, float] = {"figures_s": 0.0, "calls": 0}
    depth = [0]

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            start = cpu()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:  # a plotting call inside another is counted once
                    spent["figures_s"] += cpu() - start
                    spent["calls"] += 1

        return timed

    for module, names in FIGURE_CALLS.items():
        mod = importlib.import_module(module)
        for name in names:
            if hasattr(mod, name):
                setattr(mod, name, wrap(getattr(mod, name)))
    from perception_safety.report import html

    html.Section.figure = wrap(html.Section.figure)  # the embedding (its own decode/encode in older checkouts)
    return spent


def best_cpu(fn: Callable[[], Any], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        start = cpu()
        fn()
        out.append(cpu() - start)
    return min(out)


def thumbnails_now_and_before(out: Path, cfg: Any, repeat: int) -> tuple[float, float, int, float]:
    """CPU s of the report's pictures from the run's partials: sought by window, with the windows removed, and
    sought with the strips cut from the former 266 x 200 px windows (decoded in full where the object is small)."""
    from perception_safety.pipeline.analyses import evidence
    from perception_safety.pipeline.analyses.base import Evaluation
    from perception_safety.pipeline.analyses.evidence import pictures
    from perception_safety.pipeline.evaluate import reduce_partials
    from perception_safety.pipeline.partials import read_partial
    from perception_safety.report.html import Report

    parts = [read_partial(p.read_text(), str(p)) for p in sorted((out / "partials").glob("*.json"))]
    red = reduce_partials(parts, cfg)
    old = reduce_partials(parts, cfg)
    for cell in old.evidence.get("cells", {}).values():
        cell["refs"] = [{k: v for k, v in r.items() if k != "log_ns"} for r in cell["refs"]]
    n = sum(len(ts) for _, ts in pictures(Evaluation({}, Report("b")), red, cfg).strips)
    now = best_cpu(lambda: pictures(Evaluation({}, Report("b")), red, cfg), repeat)
    before = best_cpu(lambda: pictures(Evaluation({}, Report("b")), old, cfg), repeat)
    strip_h, evidence.STRIP_WINDOW_H = evidence.STRIP_WINDOW_H, evidence.MIN_WINDOW_H
    try:
        framed_before = best_cpu(lambda: pictures(Evaluation({}, Report("b")), red, cfg), repeat)
    finally:
        evidence.STRIP_WINDOW_H = strip_h
    return now, before, n, framed_before


PLOT_MODULES = ("breakdown_plots", "confusion_plots", "pcd_plots", "verification_plots")


def figures_in_process(demo: Path, copies: int, config: Path) -> dict[str, Any]:
    """In this (fresh) process: CPU s of importing the plotting modules, then one evaluate of the copies with every
    plotting call timed; the figures' files and bytes; whether matplotlib got loaded."""
    start = cpu()
    for name in PLOT_MODULES:
        importlib.import_module(f"perception_safety.report.{name}")
    imported = cpu() - start
    from rich.console import Console

    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.run import run_evaluate

    spent = timed_figures()
    cfg, text = load_evaluate_config(config)
    quiet = Console(file=open(os.devnull, "w"), stderr=False)  # noqa: SIM115 - the progress bars go nowhere
    with tempfile.TemporaryDirectory(prefix="bench_figures_") as tmp:
        bags = demo_copies(demo, copies, Path(tmp))
        out = Path(tmp) / "out"
        ev = run_evaluate(sorted({b.parents[2] for b in bags}), cfg, text, out, 1, quiet)
        files = [p for p in out.rglob("*") if p.suffix in (".svg", ".png") and "evidence" not in p.parts]
        return {"import_s": imported, "figures_s": spent["figures_s"], "calls": spent["calls"],
                "files": len(files), "bytes": sum(p.stat().st_size for p in files),
                "report_bytes": (out / "report.html").stat().st_size,
                "total_s": ev.results["timings"]["cpu"]["total_s"],
                "matplotlib": any(m.split(".")[0] == "matplotlib" for m in sys.modules)}


def figures_of(tree: Path, demo: Path, copies: int) -> dict[str, Any]:
    """`figures_in_process` on the package of ``tree`` (with its own config/demo.yaml), in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
            "from bench_report import figures_in_process; from pathlib import Path; "
            f"print(json.dumps(figures_in_process(Path({str(demo)!r}), {copies}, "
            f"Path({str(tree / 'config' / 'demo.yaml')!r}))))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True,
                          check=False)  # cwd: `-c` puts the working directory first on sys.path
    if proc.returncode:
        raise SystemExit(f"figures on {tree}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def old_tree(ref: str | None, into: Path) -> tuple[str, Path]:
    """The package and config of ``ref`` (default: the parent of the commit that added report/svg) under ``into``."""
    repo = Path(__file__).resolve().parents[1]
    if ref is None:
        first = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--",
                                "perception_safety/report/svg/canvas.py"], cwd=repo, capture_output=True, text=True,
                               check=True).stdout.split()
        ref = f"{first[-1]}~1"
    archive = subprocess.run(["git", "archive", ref, "perception_safety", "config"], cwd=repo, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return ref, into


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, default=Path("/work/demo_out"))
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2, help="repeats of each in-process comparison (best CPU kept)")
    ap.add_argument("--old-ref", default=None, help="git ref of the former figures (default: the last matplotlib one)")
    args = ap.parse_args()
    from rich.console import Console

    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.run import run_evaluate

    repo = Path(__file__).resolve().parents[1]
    spent = timed_figures()
    cfg, text = load_evaluate_config(repo / "config" / "demo.yaml")
    quiet = Console(file=open(os.devnull, "w"), stderr=False)  # noqa: SIM115 - the progress bars go nowhere
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        bags = demo_copies(args.demo, args.copies, Path(tmp))
        roots = sorted({b.parents[2] for b in bags})
        l0, c = load(), cpu()
        read_non_image(bags)
        bare = cpu() - c
        l1 = load()
        ev = run_evaluate(roots, cfg, text, Path(tmp) / "out", 1, quiet)
        steps = ev.results["timings"]["cpu"]
        l2 = load()
        t_now, t_before, n_thumbs, t_framed = thumbnails_now_and_before(Path(tmp) / "out", cfg, args.repeat)
        l3 = load()
        now = figures_of(repo, args.demo, args.copies)
        ref, old_root = old_tree(args.old_ref, Path(tmp) / "old")
        before = figures_of(old_root, args.demo, args.copies)
        l4 = load()
        rows = [("bare read + deserialise, non-image topics", bare, l0)]
        rows += [(f"evaluate step {k[:-2]}", steps[k], l1) for k in ("thumbnails_s", "evidence_s", "confusion_s",
                                                                      "breakdowns_s") if k in steps]
        rows += [(f"evaluate: {spent['calls']} plotting calls (all steps)", spent["figures_s"], l1),
                 ("evaluate in all", steps["total_s"], l1),
                 (f"pictures ({n_thumbs} strip thumbnails): sought", t_now, l2),
                 ("pictures: former path (bags read whole)", t_before, l2),
                 ("pictures: sought, strips cut from 266 x 200 px (former)", t_framed, l2)]
        for side, r in (("SVG (this checkout)", now), (f"matplotlib ({ref})", before)):
            rows += [(f"{side}: {r['calls']} plotting calls, {r['files']} files {r['bytes'] / 1024:.0f} KB",
                      r["figures_s"], l3),
                     (f"{side}: import of the plotting modules", r["import_s"], l3),
                     (f"{side}: evaluate in all (report {r['report_bytes'] / 1024:.0f} KB)", r["total_s"], l4)]
        size = (Path(tmp) / "out" / "report.html").stat().st_size
        print(f"\n{len(bags)} bags ({args.copies} copies), {ev.results['frames']} frames, report.html "
              f"{size / 1024:.0f} KB")
        print(f"{'':<72}{'CPU s':>8}{'vs bare':>9}   load (1/5/15 min)")
        for name, sec, ld in rows:
            print(f"{name:<72}{sec:8.2f}{sec / bare:9.3f}   {ld}")
        fig_now, fig_before = now["figures_s"] + now["import_s"], before["figures_s"] + before["import_s"]
        print(f"thumbnails: {t_now / t_before:.2f}x the former path, {t_now / t_framed:.2f}x the former strip "
              f"windows; figures (calls + import): {fig_now:.2f} vs {fig_before:.2f} CPU s = "
              f"{fig_now / fig_before:.2f}x matplotlib; matplotlib loaded by evaluate: {now['matplotlib']} (this "
              f"checkout), {before['matplotlib']} ({ref})")


if __name__ == "__main__":
    main()
