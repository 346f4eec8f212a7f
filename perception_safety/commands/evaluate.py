"""``perception-safety evaluate BAG_OR_DIR... --config FILE --out DIR``: every analysis in one pass, one report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from perception_safety.commands._executor_args import add_executor_arguments, executor_from_args
from perception_safety.commands._input_roles import add_input_role_flags

if TYPE_CHECKING:  # rich loads when the command runs, not for --help
    from rich.console import Console


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="confusion matrices, AP, PCD, verification, BBSL tests and SG/RH/AC from bags and datasets, in one report",
        description="Reads rosbag2 bags (sqlite3 or mcap) and JSON Lines datasets (what 'convert' writes), in any mix "
        "(directories are searched for both), computes every analysis the config asks for (map per bag or dataset "
        "episode, reduce), and writes OUT/results.json and OUT/report.html.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="bag directories, JSON Lines datasets (.jsonl/.ndjson) or directories containing either",
    )
    p.add_argument("--config", type=Path, default=None, help="YAML config (default: built-in defaults)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_executor_arguments(p, "bag")
    p.add_argument(
        "--episodes",
        nargs="+",
        default=[],
        metavar="LOG",
        help="episode logs (JSON Lines) for SG/RH/AC, e.g. from 'perception-safety episodes'",
    )
    add_input_role_flags(p)
    p.add_argument(
        "--hash",
        choices=("metadata", "full"),
        default="metadata",
        help="input fingerprints in the provenance: 'metadata' = sha256 of metadata.yaml + file sizes (fast, "
        "default), 'full' = sha256 of every bag file (reads all bytes)",
    )
    p.add_argument(
        "--timings",
        action="store_true",
        help="print the wall-clock seconds of every step (also saved in results.json under 'timings')",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="gate on the config's requirements as written to OUT/results.json (which must be this run's, "
        "complete): exit 3 when any requirement fails or could not be evaluated",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text

    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.run import run_evaluate
    from perception_safety.pipeline.run_state import evaluation_run, load_complete_results

    console = Console(stderr=True)
    with evaluation_run(args.out) as run_id:  # first: even a bad config leaves no earlier results looking current
        cfg, text = load_evaluate_config(args.config)
        cfg = cfg.model_copy(update={"executor": executor_from_args(args, cfg.executor)})
        ev = run_evaluate(
            args.inputs,
            cfg,
            text,
            args.out,
            None,
            console,
            args.episodes,
            args.include_perfect_perception,
            args.hash,
            include_monitored=args.include_monitored,
            run_id=run_id,
        )
    out_console = Console()
    print_summary(ev, args.out, out_console)
    if getattr(args, "timings", False):
        from perception_safety.pipeline.run import timings_lines

        out_console.print("timings (wall clock):", highlight=False)
        for line in timings_lines(ev.results["timings"]):
            out_console.print("  " + line, highlight=False, markup=False)
    # the gate reads what was written: results.json of this very run, marked complete
    block = load_complete_results(args.out, run_id).get("requirements") if args.check else None
    if block is not None and block["overall"] != "PASS":
        out_console.print(
            Text(
                f"--check: {block['failed']} requirement(s) failed, {block.get('inconclusive', 0)} inconclusive, "
                f"{block['not_evaluated']} not evaluated: exit 3",
                style="bold red",
            )
        )
        return CHECK_FAILED
    return 0


CHECK_FAILED = 3
"""Exit code of `evaluate --check` when a requirement fails, is inconclusive or not evaluated (2 = could not run)."""


def print_requirements(block: dict, console: Console) -> None:
    """PASS / FAIL / INCONCLUSIVE / NOT EVALUATED per requirement: the estimate, its interval and the end of the
    interval held to the threshold (as the report's table)."""
    from rich.table import Table
    from rich.text import Text

    styles = {"PASS": "green", "FAIL": "bold red", "INCONCLUSIVE": "bold yellow", "NOT EVALUATED": "yellow"}
    table = Table(title=f"requirements: {block['overall']}")
    for col in ("verdict", "requirement", "point", "interval", "required", "n", "episodes"):
        table.add_column(
            col, justify="left" if col in ("verdict", "requirement") else "right", no_wrap=col == "verdict"
        )
    for v in block["items"]:
        point = "-" if v.get("point") is None else f"{v['point']:.4g}"
        lo = "-" if v["lower"] is None else f"{v['lower']:.3g}"
        hi = "-" if v["upper"] is None else f"{v['upper']:.3g}"
        table.add_row(
            Text(v["status"], style=styles[v["status"]]),
            v["label"],
            point,
            f"{v['bound']} {v['op']} {v['threshold']:g}",
            f"[{lo}, {hi}]",
            "-" if v["n"] is None else str(v["n"]),
            "-" if v.get("clusters") is None else str(v["clusters"]),
        )
    console.print(table)
    for v in block["items"]:
        if v["status"] != "PASS":
            line = f"{v['status']}: {v['label']}: {v['detail']}"
            console.print(Text(line, style=styles[v["status"]]), soft_wrap=True)


def warning_lines(warnings: list[dict], min_group: int = 3) -> list[str]:
    """One console line per warning; warnings of one analysis that say the same about several places
    (``<place>: <text>``, the place without spaces) share one line naming every place, in first-seen order
    (results.json and the report keep each warning)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for w in warnings:
        place, sep, rest = w["message"].partition(": ")
        key = (w["analysis"], rest) if sep and place and " " not in place else (w["analysis"], w["message"])
        groups.setdefault(key, []).append(place if key[1] == rest else "")
    lines = []
    for (analysis, text), places in groups.items():
        if len(places) >= min_group and all(places):
            lines.append(f"warning [{analysis}] ({len(places)} places: {', '.join(places)}): {text}")
        else:
            lines.extend(f"warning [{analysis}]: {p + ': ' if p else ''}{text}" for p in places)
    return lines


def print_summary(ev, out: Path, console: Console) -> None:
    """One screen: the headline numbers and where the report is."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"perception_safety: {ev.report.subtitle}")  # frames, inputs, unreadable ones (run.py)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("samples")
    for m in ev.report.summary:
        value = f"{m.value:.4g}" if isinstance(m.value, float) else str(m.value)
        table.add_row(m.label, f"{value} {m.unit}".strip(), m.samples)
    console.print(table)
    if ev.results.get("requirements"):
        print_requirements(ev.results["requirements"], console)
    for bag, r in ev.results["data_quality"].items():
        unmatched = sum(r["unmatched"].values())
        if r["skipped"] or unmatched or r["missing_topics"]:
            missing = f", missing topics: {', '.join(r['missing_topics'])}" if r["missing_topics"] else ""
            text = f"{bag}: {len(r['skipped'])} malformed message(s) skipped, {unmatched} unmatched{missing}"
            console.print(Text(text, style="yellow"), soft_wrap=True)
    for line in warning_lines(ev.results.get("warnings", [])):
        console.print(Text(line, style="yellow"), soft_wrap=True)
    console.print(f"report:  {out / 'report.html'}")
    console.print(f"results: {out / 'results.json'}")
