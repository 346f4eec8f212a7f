"""The report's fixed cost in `evaluate` (issue 27 target 1): thumbnails and figures, in CPU seconds, each against
its former path and against a bare rosbags read + deserialisation of the same bags' non-image topics, all in one run.

``--copies`` copies of the demo's perception bags (folders of symlinks, as `bench_evaluate.py --demo` makes them)
are evaluated once with the demo config (``--jobs 1``): the CPU seconds of its ``thumbnails``, ``evidence``,
``confusion`` and ``breakdowns`` steps and of every plotting call (timed around the calls). Then, in the same
process, on what that run produced:
- thumbnails: the report's pictures from the run's partials as they are (each frame sought by its recording window)
  and with the windows removed (the former path: each referenced bag's non-image topics read whole);
- figures: each figure the run drew, saved for the report as now (drawn once at the shown width, one palette PNG)
  and the former way (``savefig`` at the figure's dpi, then decoded, resampled, quantised and encoded again).
The load average is printed with every figure (the machine is shared).

Usage: python benchmarks/bench_report.py [--demo /work/demo_out] [--copies 16] [--repeat 2]
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
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


def captured_figures() -> list[tuple[Any, float, Any]]:
    """Record every figure saved for the report (figure, dpi, width) while still saving it."""
    from perception_safety.report import breakdown_plots, confusion_plots, figure_save, pcd_plots, verification_plots

    seen: list[tuple[Any, float, Any]] = []
    original = figure_save.save_figure

    def save(fig: Any, path: Any, dpi: float, width_px: Any = figure_save.REPORT_WIDTH) -> Path:
        seen.append((fig, dpi, width_px))
        return original(fig, path, dpi, width_px)

    for mod in (breakdown_plots, confusion_plots, pcd_plots, verification_plots):
        mod.save_figure = save
    return seen


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


def figures_now_and_before(seen: list[tuple[Any, float, Any]], tmp: Path, repeat: int) -> tuple[float, float, int,
                                                                                                   int]:
    """CPU s (and bytes) of saving every captured figure for the report now and the former way."""
    import io

    from perception_safety.report.figure_save import save_figure
    from perception_safety.report.html import compact_png

    sizes = [0, 0]

    def now() -> None:
        sizes[0] = sum(save_figure(fig, tmp / "f.png", dpi, width).stat().st_size for fig, dpi, width in seen)

    def before() -> None:
        total = 0
        for fig, dpi, _ in seen:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi)  # the former file: full size, RGB
            total += len(compact_png(buf.getvalue()))  # the former embedding: decode, resample, quantise, encode
        sizes[1] = total

    return best_cpu(now, repeat), best_cpu(before, repeat), sizes[0], sizes[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, default=Path("/work/demo_out"))
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2, help="repeats of each in-process comparison (best CPU kept)")
    args = ap.parse_args()
    from rich.console import Console

    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.run import run_evaluate

    spent = timed_figures()
    seen = captured_figures()
    config = Path(__file__).resolve().parents[1] / "config" / "demo.yaml"
    cfg, text = load_evaluate_config(config)
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
        f_now, f_before, b_now, b_before = figures_now_and_before(seen, Path(tmp), args.repeat)
        rows = [("bare read + deserialise, non-image topics", bare, l0)]
        rows += [(f"evaluate step {k[:-2]}", steps[k], l1) for k in ("thumbnails_s", "evidence_s", "confusion_s",
                                                                      "breakdowns_s") if k in steps]
        rows += [(f"evaluate: {spent['calls']} plotting calls (all steps)", spent["figures_s"], l1),
                 ("evaluate in all", steps["total_s"], l1),
                 (f"pictures ({n_thumbs} strip thumbnails): sought", t_now, l2),
                 ("pictures: former path (bags read whole)", t_before, l2),
                 ("pictures: sought, strips cut from 266 x 200 px (former)", t_framed, l2),
                 (f"{len(seen)} figures saved now ({b_now / 1024:.0f} KB)", f_now, l3),
                 (f"figures the former way ({b_before / 1024:.0f} KB)", f_before, l3)]
        size = (Path(tmp) / "out" / "report.html").stat().st_size
        print(f"\n{len(bags)} bags ({args.copies} copies), {ev.results['frames']} frames, report.html "
              f"{size / 1024:.0f} KB")
        print(f"{'':<56}{'CPU s':>8}{'vs bare':>9}   load (1/5/15 min)")
        for name, sec, ld in rows:
            print(f"{name:<56}{sec:8.2f}{sec / bare:9.3f}   {ld}")
        print(f"thumbnails: {t_now / t_before:.2f}x the former path, {t_now / t_framed:.2f}x the former strip "
              f"windows; figures: {f_now / f_before:.2f}x the former way")


if __name__ == "__main__":
    main()
