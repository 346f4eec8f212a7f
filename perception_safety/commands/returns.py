"""``perception-safety returns``: Safety Gain / Residual Hazard / Availability Cost tables (SG/RH/AC paper eq. 7-9).

From episode logs (schemes E1 and E2)::

    perception-safety returns runs/*.jsonl --out results/ [--config config/monitors.yaml]

From any binary-labelled dataset (the classification form, eq. 10-13), a CSV with columns
``tau`` and ``alarm`` (0/1 or true/false)::

    perception-safety returns --binary labels.csv --out results/
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the estimators, pydantic and numpy load when the command runs, not for --help
    from perception_safety.evaluation.returns import ReturnsConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("returns", help="SG/RH/AC of a runtime monitor from episode logs or binary labels")
    p.add_argument("logs", metavar="LOG", nargs="*", type=Path, help="episode logs (JSON Lines, io.episode_log)")
    p.add_argument("--binary", metavar="CSV", type=Path, help="classification form: CSV with columns tau, alarm")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="output directory")
    p.add_argument("--config", metavar="FILE", type=Path, help="YAML with a `returns` section (default: built-in)")
    p.add_argument("--iou", type=float, help="E1: IoU threshold of a match (overrides config)")
    p.add_argument("--score", type=float, help="E1: score threshold of a detection (overrides config)")
    p.add_argument("--classes", help="E1: comma-separated classes that count (overrides config)")
    p.add_argument("--horizon", type=int, help="E2: episode length T in frames (overrides config)")
    p.set_defaults(func=run)


def _config(args: argparse.Namespace, logged: ReturnsConfig | None = None) -> ReturnsConfig:
    """--config (else the settings the episode runner recorded in the logs, else the defaults), then the overrides."""
    from pydantic import ValidationError

    from perception_safety.evaluation.returns import ReturnsConfig, ReturnsError
    from perception_safety.io.config import format_validation_error, load_model

    if args.config is None and logged is not None:
        cfg = logged
        print(
            "note: using the E1/E2 settings the episode runner recorded in the logs (as in its results.json)",
            file=sys.stderr,
        )
    else:
        cfg = load_model(args.config, ReturnsConfig, section="returns")
    e1 = {}
    if args.iou is not None:
        e1["iou_threshold"] = args.iou
    if args.score is not None:
        e1["score_threshold"] = args.score
    if args.classes is not None:
        e1["classes"] = tuple(c.strip() for c in args.classes.split(",") if c.strip())
    e2 = {} if args.horizon is None else {"horizon": args.horizon}
    try:
        return ReturnsConfig.model_validate({"e1": {**cfg.e1.model_dump(), **e1}, "e2": {**cfg.e2.model_dump(), **e2}})
    except ValidationError as exc:
        raise ReturnsError(format_validation_error("command line", exc)) from None


def _read_binary(path: Path) -> tuple[list[bool], list[bool]]:
    from perception_safety.evaluation.returns import ReturnsError

    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise ReturnsError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    truth = {"1": True, "true": True, "0": False, "false": False}
    tau, alarm = [], []
    with fh:
        reader = csv.DictReader(fh)
        fields = reader.fieldnames or []
        for col in ("tau", "alarm"):
            if col not in fields:
                raise ReturnsError(f"{path}:1: missing column {col!r} (header: {', '.join(fields) or 'empty'})")
        for row in reader:
            line = reader.line_num
            for col, dest in (("tau", tau), ("alarm", alarm)):
                raw = (row.get(col) or "").strip().lower()
                if raw not in truth:
                    raise ReturnsError(f"{path}:{line}: column {col!r}: expected 0/1/true/false, got {raw!r}")
                dest.append(truth[raw])
    if not tau:
        raise ReturnsError(f"{path}: no data rows")
    return tau, alarm


def _print_table(report: dict) -> None:
    print(f"{'scheme':<6} {'average':<9} {'SG':>8} {'RH':>8} {'AC':>8} {'SG+RH':>8} {'n':>7}")
    for scheme in ("E1", "E2", "binary"):
        block = report.get(scheme)
        if not block:
            continue
        for avg in ("frames", "episodes", "samples"):
            m = block.get(avg)
            if m:
                print(
                    f"{scheme:<6} {avg:<9} {m['SG']:>8.4f} {m['RH']:>8.4f} {m['AC']:>8.4f} "
                    f"{m['hazard_f']:>8.4f} {m['n']:>7d}"
                )


def _write_episode_csv(path: Path, report: dict) -> None:
    from perception_safety.safe_io import atomic_open

    e1 = report.get("E1", {}).get("per_episode", {})
    e2 = report.get("E2", {}).get("per_episode", {})
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "episode",
                "E1_SG",
                "E1_RH",
                "E1_AC",
                "E1_frames",
                "E2_SG",
                "E2_RH",
                "E2_AC",
                "E2_frames",
                "collided_f",
                "collided_fm",
                "collided_fstar",
                "running_f",
                "running_fm",
                "running_fstar",
            ]
        )
        for ep in dict.fromkeys([*e1, *e2]):
            a, b = e1.get(ep), e2.get(ep)
            row = [ep]
            row += [a["SG"], a["RH"], a["AC"], a["n"]] if a else ["", "", "", ""]
            if b:
                row += [b["SG"], b["RH"], b["AC"], b["n"]]
                row += [int(b["collided"][r]) for r in ("perception", "monitored", "ground_truth")]
                row += [b["running_frames"][r] for r in ("perception", "monitored", "ground_truth")]
            else:
                row += [""] * 10
            w.writerow(row)


def run(args: argparse.Namespace) -> int:
    from perception_safety.evaluation.returns import (
        ReturnsError,
        binary_counts,
        classification_returns,
        logged_config,
        returns_report,
        safety_metrics,
    )
    from perception_safety.io.episode_log import EpisodeLogReport, read_episode_log
    from perception_safety.safe_io import write_text

    if bool(args.logs) == bool(args.binary):
        raise ReturnsError("returns: give episode logs or --binary CSV (exactly one of them)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.binary:
        tau, alarm = _read_binary(args.binary)
        m = safety_metrics(classification_returns(tau, alarm))
        report: dict = {
            "source": str(args.binary),
            "binary": {"samples": m.as_dict(), "counts": binary_counts(tau, alarm).as_dict()},
        }
    else:
        episodes = []
        for path in args.logs:
            rep = EpisodeLogReport()
            episodes += read_episode_log(path, rep)
            for msg in rep.messages:
                print(f"warning: {msg}", file=sys.stderr)
        cfg = _config(args, logged_config(episodes))
        report = returns_report(episodes, cfg)
        for warning in report["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
        report["sources"] = [str(p) for p in args.logs]
        _write_episode_csv(args.out / "returns_episodes.csv", report)
        for note in report["notes"]:
            print(f"note: {note}", file=sys.stderr)
    write_text((args.out / "returns.json"), json.dumps(report, indent=2) + "\n")
    _print_table(report)
    print(f"wrote {args.out / 'returns.json'}")
    return 0
