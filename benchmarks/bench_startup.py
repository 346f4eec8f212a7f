"""Start-up cost of the `perception-safety` command: what a user pays before any data is read (issue 27 target 1).

In one run, each in a fresh process (``--repeat`` times, the least CPU kept; CPU = user + system of the child):
- ``python -c pass`` (the interpreter alone) and ``import rosbags.rosbag2, rosbags.typesys`` (the bare read's
  imports), the baselines;
- ``perception-safety --help`` and ``perception-safety evaluate --help`` (every command's parser);
- the imports ``evaluate`` starts with (its config models and the pipeline), and ``python -X importtime`` of
  them: the top-level entries by cumulative time.
With ``--demo DIR``: ``perception-safety evaluate`` in a fresh process on ``--copies`` copies of the demo's
perception bags (as `bench_evaluate.py --demo`), its total CPU against the CPU its results.json ``timings``
count and against a bare rosbags read + deserialisation of the same bags' non-image topics (in this process).

With ``--baseline DIR`` (another checkout of the package, e.g. a ``git worktree`` at an earlier commit) every
fresh-process case also runs on that code, interleaved with this checkout's, and the table gives the ratio.

Usage: python benchmarks/bench_startup.py [--repeat 5] [--top 15] [--demo /work/demo_out --copies 16]
       [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVALUATE_IMPORTS = "import perception_safety.pipeline.evaluate_config, perception_safety.pipeline.run"


def command() -> list[str]:
    """The installed console script beside this interpreter, else the module (same code on PYTHONPATH)."""
    script = Path(sys.executable).parent / "perception-safety"
    return [str(script)] if script.exists() else [sys.executable, "-m", "perception_safety.cli"]


PYCACHE = Path(tempfile.mkdtemp(prefix="bench_startup_pycache_"))
"""Where the ``(bytecode cached)`` cases keep compiled modules (the first run of each fills it)."""


def env(checkout: Path = ROOT, cached: bool = False) -> dict[str, str]:
    """``cached``: bytecode written and reused, as for an installed package (this sandbox sets
    PYTHONDONTWRITEBYTECODE=1, so every other process compiles the package's modules from source)."""
    out = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "100"}
    if cached:
        out.pop("PYTHONDONTWRITEBYTECODE", None)
        out["PYTHONPYCACHEPREFIX"] = str(PYCACHE / checkout.name)
    return out


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], checkout: Path = ROOT, cached: bool = False) -> tuple[float, float]:
    """(CPU s, wall s) of one fresh process on ``checkout``'s code; its output is dropped. It runs in the root
    folder: ``python -c`` puts its working directory first on the path, which would import the checkout there."""
    c, t = children_cpu(), time.perf_counter()
    quiet = subprocess.DEVNULL
    subprocess.run(argv, env=env(checkout, cached), cwd="/", stdout=quiet, stderr=quiet, check=True)
    return children_cpu() - c, time.perf_counter() - t


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def importtime_top(code: str, top: int) -> list[tuple[int, int, str]]:
    """(cumulative us, self us, module) of the first two levels of ``python -X importtime -c code``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], env=env(), cwd="/", capture_output=True, text=True, check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(3)) <= 3:  # top level and its direct imports
            rows.append((int(m.group(2)), int(m.group(1)), ("  " if len(m.group(3)) > 1 else "") + m.group(4)))
    return sorted(rows, reverse=True)[:top]


def startup(repeat: int, top: int, baseline: Path | None) -> None:
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "import rosbags.rosbag2, rosbags.typesys": [py, "-c", "import rosbags.rosbag2, rosbags.typesys"],
        "perception-safety --help": [*command(), "--help"],
        "perception-safety evaluate --help": [*command(), "evaluate", "--help"],
        "evaluate's imports (config models, pipeline)": [py, "-c", EVALUATE_IMPORTS],
        "evaluate's imports, bytecode cached": [py, "-c", EVALUATE_IMPORTS],
    }
    code = [ROOT] if baseline is None else [ROOT, baseline]
    best: dict[tuple[str, Path], tuple[float, float]] = {}
    for _ in range(repeat):  # interleaved, so that a burst of load hits every case alike
        for name, argv in cases.items():
            for checkout in code:
                cpu, wall = timed(argv, checkout, cached=name.endswith("bytecode cached"))
                old = best.get((name, checkout))
                best[name, checkout] = (min(cpu, old[0]), min(wall, old[1])) if old else (cpu, wall)
    bare, rosbags = best["python -c pass", ROOT][0], best["import rosbags.rosbag2, rosbags.typesys", ROOT][0]
    print(f"start-up, fresh processes, least of {repeat} (load at end {load()}; PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}: with 1, every process compiles the package from source)")
    head = f"{'command':<48}{'CPU s':>8}{'wall s':>8}{'vs pass':>9}{'vs rosbags':>11}"
    print(head + (f"{'baseline CPU s':>16}{'vs baseline':>12}" if baseline else ""))
    for name in cases:
        cpu, wall = best[name, ROOT]
        row = f"{name:<48}{cpu:8.3f}{wall:8.3f}{cpu / bare:9.1f}{cpu / rosbags:11.2f}"
        if baseline:
            row += f"{best[name, baseline][0]:16.3f}{cpu / best[name, baseline][0]:12.2f}"
        print(row)
    if baseline:
        print(f"baseline: {baseline}")
    print(f"\npython -X importtime -c '{EVALUATE_IMPORTS}': top {top} of the first two levels by cumulative time")
    print(f"{'cumulative ms':>14}{'self ms':>9}  module")
    for cum, own, name in importtime_top(EVALUATE_IMPORTS, top):
        print(f"{cum / 1000:14.1f}{own / 1000:9.1f}  {name}")


def demo_run(demo: Path, copies: int, config: Path, baseline: Path | None) -> None:
    """Fresh-process `evaluate` on the demo copies: total CPU vs the timings it reports vs the bare read."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_evaluate import demo_copies, read_non_image

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp_s:
        tmp = Path(tmp_s)
        bags = demo_copies(demo, copies, tmp / "in")
        roots = sorted({b.parents[2] for b in bags})
        own = resource.getrusage(resource.RUSAGE_SELF)
        c0, l0 = own.ru_utime + own.ru_stime, load()
        n = read_non_image(bags)
        own = resource.getrusage(resource.RUSAGE_SELF)
        bare = own.ru_utime + own.ru_stime - c0
        for i, checkout in enumerate([ROOT] if baseline is None else [ROOT, baseline]):
            out = tmp / f"out{i}"
            argv = [*command(), "evaluate", *map(str, roots), "--config", str(config), "--out", str(out), "--jobs", "1"]
            cpu, wall = timed(argv, checkout)
            timings = json.loads((out / "results.json").read_text(encoding="utf-8"))["timings"]
            counted = timings["cpu"]["total_s"] if "cpu" in timings else None
            rows.append(("this checkout" if checkout == ROOT else "baseline", cpu, wall, counted))
    print(f"\n`perception-safety evaluate --jobs 1` on {len(bags)} bags ({copies} copies of the demo's perception "
          f"bags, {n} non-image messages), load at start {l0}:")
    print(f"{'':<58}{'CPU s':>8}{'vs bare':>9}")
    print(f"{'bare rosbags read + deserialise (in this process)':<58}{bare:8.2f}{1:9.2f}")
    for who, cpu, wall, counted in rows:
        if counted is not None:
            print(f"{who + ': the steps its timings count':<58}{counted:8.2f}{counted / bare:9.2f}")
        print(f"{who + f': whole fresh process (wall {wall:.2f} s)':<58}{cpu:8.2f}{cpu / bare:9.2f}")
        if counted is not None:
            print(f"{'  outside the timings (interpreter, imports, exit)':<58}{cpu - counted:8.2f}"
                  f"{(cpu - counted) / bare:9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="fresh processes per start-up case (least CPU kept)")
    ap.add_argument("--top", type=int, default=15, help="importtime entries shown")
    ap.add_argument("--demo", type=Path, help="a `perception-safety demo` output: also the fresh-process evaluate")
    ap.add_argument("--copies", type=int, default=16, help="copies of the demo's perception bags (--demo)")
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "demo.yaml", help="evaluate config (--demo)")
    ap.add_argument("--baseline", type=Path, help="another checkout of the package, measured in the same run")
    args = ap.parse_args()
    baseline = args.baseline.resolve() if args.baseline else None
    try:
        startup(args.repeat, args.top, baseline)
        if args.demo:
            demo_run(args.demo, args.copies, args.config, baseline)
    finally:
        shutil.rmtree(PYCACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
