"""``perception-safety confusion``: distance-binned class- and proposition-labeled confusion matrices.

Inputs (any mix, summed): JSON Lines datasets (``.jsonl``/``.ndjson``), CSV detection datasets
(``.csv``, see `perception_safety.evaluation.confusion.io.read_detection_csv`), rosbag2 bags (directory with
``metadata.yaml``, or its ``.mcap``/``.db3`` file, or a directory holding bags) and existing matrix
files (``.json`` in this package's format or the seed paper's reference format). Writes
``OUT/confusion.json``, ``OUT/confusion.csv``, ``OUT/confusion_metrics.csv`` and heatmaps.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perception_safety.commands._input_roles import add_input_role_flags
from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io import InputFileError, load_json

if TYPE_CHECKING:  # pydantic and the confusion package load when the command runs, not for --help
    from perception_safety.commands._confusion_config import ConfusionRunConfig


def register(subparsers: Any) -> None:
    """Add the ``confusion`` sub-command."""
    p = subparsers.add_parser(
        "confusion",
        help="distance-binned class- and proposition-labeled confusion matrices",
        description="Class- and proposition-labeled confusion matrices per distance bin and pooled "
        "(cm[pred][true], empty last), with P(pred|true), recall/precision per bin, CSV and heatmaps.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSON Lines (.jsonl) or CSV (.csv) dataset, rosbag2 bag (dir or .mcap/.db3), matrix .json, or a folder "
        "(searched for bags and JSON Lines datasets)",
    )
    p.add_argument("--config", type=Path, default=None, help="YAML file with a 'confusion' section")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--no-plots", action="store_true", help="skip the heatmap SVGs")
    p.add_argument("--skip-bad", action="store_true", help="skip (and count) malformed dataset lines")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_input_role_flags(p)
    p.set_defaults(func=run)


def _matrix_file(path: Path) -> bool:
    """A ``.json`` file holding one JSON object with bin edges is a matrix file."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        data = load_json(path, "JSON")
    except InputFileError:  # not one JSON document: read as a dataset, whose reader names the problem
        return False
    return isinstance(data, dict) and ("bin_edges" in data or "bin_edges_m" in data)


def _frames(
    path: Path,
    cfg: ConfusionRunConfig,
    skip_bad: bool,
    notes: list[str],
    cfg_name: str,
    include_perfect: bool = False,
    include_monitored: bool = False,
) -> Iterator[Any]:
    suffix = path.suffix.lower()
    if path.is_file() and suffix in (".jsonl", ".ndjson", ".json"):
        from perception_safety.io.dataset import DatasetReadReport, read_jsonl_frames

        rep = DatasetReadReport()
        yield from _scoped(read_jsonl_frames(path, skip_bad=skip_bad, report=rep), str(path), cfg)
        notes += [f"skipped {where[0]}:{where[1]}: {why}" for where, why in rep.skipped.items()]
        return
    if path.is_dir() or suffix in (".mcap", ".db3"):
        from perception_safety.evaluation.confusion.clusters import with_episode
        from perception_safety.io.bag import BagReadReport, BagTopics, read_frames
        from perception_safety.io.bag_inputs import bag_conditions, input_notes, select_bags, used
        from perception_safety.io.config import model_from_mapping

        topics = model_from_mapping(cfg.bag, BagTopics, cfg_name, "confusion.bag")
        rep = BagReadReport()
        found = select_bags([path], include_perfect, include_monitored)
        notes += input_notes(found)
        datasets = {b.path for b in found if b.is_dataset}
        for bag in used(found):
            if bag in datasets:  # a dataset found in the folder
                yield from _frames(bag, cfg, skip_bad, notes, cfg_name)
                continue
            frames = read_frames(bag, topics, cfg.bag_tolerance_ns, with_images=False, report=rep)
            episode = bag_conditions(Path(bag)).get("episode") or str(bag)  # a bag is one episode
            yield from _scoped(with_episode(frames, episode), bag, cfg)
        notes += rep.summary_lines()[1:]
        return
    if not path.exists():
        raise PerceptionSafetyError(f"{path}: no such file or directory")
    raise PerceptionSafetyError(f"{path}: unknown input type (expected .jsonl, .csv, a rosbag2 bag, or a matrix .json)")


def _scoped(frames: Iterable[Any], scope: Any, cfg: ConfusionRunConfig) -> Iterator[Any]:
    """With ``sample_unit: track_window``, prefix track ids with their input: episodes reuse ids and clocks."""
    if cfg.sample_unit != "track_window":
        yield from frames
        return
    from dataclasses import replace

    for f in frames:
        gts = tuple(replace(g, track_id=f"{scope}#{g.track_id}") if g.track_id else g for g in f.ground_truth)
        yield replace(f, ground_truth=gts)


def _progress(frames: Iterable[Any], label: str, enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield from frames
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task(label, total=None)
        for n, frame in enumerate(frames, start=1):
            yield frame
            if n % 512 == 0:
                progress.update(task, completed=n)


def run(args: argparse.Namespace) -> int:
    """Compute (or load and sum) the matrices of every input and write JSON, CSV and heatmaps."""
    from perception_safety.commands._confusion_config import ConfusionRunConfig
    from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, sum_confusions
    from perception_safety.evaluation.confusion.io import load_matrices, write_csv, write_json, write_metrics_csv
    from perception_safety.evaluation.confusion.metrics import class_metrics, metrics_to_json, sampling_warnings
    from perception_safety.evaluation.confusion.uncertainty import (
        thin_column_messages,
        thin_columns,
        thin_columns_to_json,
    )
    from perception_safety.evaluation.ground_truth_screen import GroundTruthScreen, screen_warnings, unmapped_warnings
    from perception_safety.io.config import load_model

    cfg = load_model(args.config, ConfusionRunConfig, section="confusion")
    skip_bad = args.skip_bad or cfg.skip_bad
    show = not args.no_progress and sys.stderr.isatty()
    parts = []
    notes: list[str] = []
    acc: ConfusionAccumulator | None = None
    frame_inputs: list[str] = []
    screen = GroundTruthScreen(cfg.iou_threshold)  # ignore regions and impossible ground truth, before accumulation
    for raw in args.inputs:
        path = Path(raw)
        if _matrix_file(path):
            parts.append(load_matrices(path))
            continue
        acc = acc or ConfusionAccumulator(cfg)
        if path.suffix.lower() == ".csv" and path.is_file():
            if cfg.sample_unit == "track_window":
                raise PerceptionSafetyError(
                    f"{path}: sample_unit track_window needs track ids and stamps, which CSV datasets do not carry "
                    "(use JSON Lines or bags, or sample_unit: frame)"
                )
            from perception_safety.evaluation.confusion.config import ClassMapper
            from perception_safety.evaluation.confusion.io import read_detection_csv

            for batch in read_detection_csv(path, ClassMapper(cfg), cfg.chunk_frames):
                acc.add_batch(batch)
        else:
            cfg_name = str(args.config or "defaults")
            frames = _frames(
                path, cfg, skip_bad, notes, cfg_name, args.include_perfect_perception, args.include_monitored
            )
            acc.add_frames(_progress(screen.frames(frames), path.name, show))
        frame_inputs.append(str(path))
    if acc is not None:
        parts.insert(0, acc.result(source=", ".join(frame_inputs)))
    try:
        dc = sum_confusions(parts)
    except ValueError as exc:
        raise PerceptionSafetyError(f"cannot combine inputs: {exc}") from exc
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerceptionSafetyError(f"{out}: cannot create output directory: {exc.strerror or exc}") from exc
    rows = class_metrics(dc, cfg.alpha, cfg.min_samples)
    thin = thin_columns(dc, cfg.min_samples)
    warnings = thin_column_messages(thin, cfg.min_samples) + sampling_warnings(dc, cfg.alpha, cfg.min_clusters)
    warnings += screen_warnings(screen.counts) + unmapped_warnings(dc.report)
    if cfg.sample_unit == "track_window" and acc is not None:
        from perception_safety.evaluation.confusion.windows import sample_unit_note, untracked_warning

        notes.append(sample_unit_note(dc.report, cfg.track_window_s))
        warnings += [w for w in (untracked_warning(dc.report),) if w]
    config = cfg.model_dump(mode="json") if acc is not None else None
    write_json(
        out / "confusion.json",
        dc,
        empty_column=cfg.empty_column,
        metrics=metrics_to_json(rows),
        config=config,
        extra={
            "inputs": [str(p) for p in args.inputs],
            "input_notes": notes,
            "min_samples": cfg.min_samples,
            "thin_columns": thin_columns_to_json(thin),
            "warnings": warnings,
        },
        alpha=cfg.alpha,
    )
    write_csv(out / "confusion.csv", dc, cfg.empty_column, cfg.alpha)
    write_metrics_csv(out / "confusion_metrics.csv", rows)
    n_svg = 0
    if cfg.plots and not args.no_plots:
        from perception_safety.report.confusion_plots import plot_all

        n_svg = len(plot_all(dc, out, cfg.empty_column))
    _print_summary(dc, rows, notes)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {out / 'confusion.json'}, confusion.csv, confusion_metrics.csv and {n_svg} SVG figure(s)")
    return 0


def _recall_cell(r: Any) -> str:
    if r.recall is None:
        return "-"
    flag = " thin" if r.thin else ""
    unit = "" if r.clusters is None else f" {r.clusters} ep."
    return f"{r.recall:.3f} [{r.recall_lower:.3f}, {r.recall_upper:.3f}] ({r.ground_truth}{unit}){flag}"


def _print_summary(dc: Any, rows: list[Any], notes: list[str]) -> None:
    classes = dc.classes
    head = "  ".join(f"{'recall ' + c + ' [CI] (n)':>30}" for c in classes)
    print(f"{'bin (m)':<14}{'objects':>9}  {head}")
    by_bin: dict[str, list[Any]] = {}
    for r in rows:
        by_bin.setdefault(r.bin, []).append(r)
    for name, rs in by_bin.items():
        span = f"[{rs[0].lo:g}, {rs[0].hi:g})" if name != "pooled" else "pooled"
        objects = sum(r.ground_truth for r in rs)
        rec = "  ".join(f"{_recall_cell(r):>30}" for r in rs)
        print(f"{span:<14}{objects:>9}  {rec}")
    rep = dc.report
    keys = ("frames", "ground_truth_beyond_range", "ground_truth_below_range", "detections_unannotated")
    parts = [f"{k}={rep[k]}" for k in keys if k in rep]
    for key in ("ground_truth_unmapped", "detections_unmapped"):
        if rep.get(key):
            parts.append(f"{key}={sum(rep[key].values())}")
    if parts:
        print("report: " + ", ".join(parts))
    for note in notes[:20]:
        print(f"note: {note}")
    if len(notes) > 20:
        print(f"note: ... and {len(notes) - 20} more")
