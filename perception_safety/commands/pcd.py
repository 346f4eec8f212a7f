"""``perception-safety pcd``: PCD, variance change points and mPCD of one or more inputs, side by side.

Inputs: CSV ``distance_m,y[,group]`` (y as given); a JSON Lines dataset (``.jsonl``) or a rosbag2 bag directory
(``samples.input``: raw = top score of the target's boxes incl. recorded sub-threshold candidates, the paper's
input; thresholded = reported detections; auto = raw where candidates were recorded). Writes ``OUT/pcd.json``,
``OUT/pcd_table.csv``, ``OUT/pcd_fit.svg`` and ``OUT/pcd_surface.svg``; warnings are printed and in the JSON.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from perception_safety.commands._input_roles import add_input_role_flags
from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io import atomic_open, write_text


def register(subparsers: Any) -> None:
    """Add the ``pcd`` sub-command."""
    p = subparsers.add_parser(
        "pcd",
        help="Perception Characteristics Distance (PCD/mPCD) with variance change points",
        description="PCD, mPCD and variance change points of IoU x confidence over distance, "
        "for one or more inputs compared side by side.",
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT",
        help="CSV (distance_m,y), JSON Lines dataset, bag dir, or a folder (searched for bags and datasets)",
    )  # fmt: skip
    p.add_argument("--config", type=Path, default=None, help="YAML file with a 'pcd' section (config/pcd.yaml)")
    p.add_argument("--method", choices=("paper", "reference"), default=None, help="overrides pcd.method")
    p.add_argument(
        "--model", choices=("gaussian", "hurdle", "auto"), default=None, help="overrides pcd.model (score model)"
    )
    p.add_argument("--n-boot", type=int, default=None, help="overrides pcd.bootstrap.n_boot (0 = no intervals)")
    p.add_argument("--label", action="append", default=None, help="label per input (repeat, in input order)")
    p.add_argument("--class-id", default=None, help="keep ground truth of this class (Frames input)")
    p.add_argument("--track-id", default=None, help="keep ground truth of this track (Frames input)")
    p.add_argument("--no-plots", action="store_true", help="write JSON and table only")
    p.add_argument(
        "--write-samples", action="store_true", help="also write OUT/samples_<label>.csv (distance_m,y,missed)"
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_input_role_flags(p)
    p.set_defaults(func=run)


def _load_samples(path: Path, cfg: Any, include_perfect: bool = False, include_monitored: bool = False):
    from perception_safety.evaluation.pcd.samples import read_samples_csv, samples_from_frames

    s = cfg.samples
    kw = {
        "class_id": s.class_id,
        "track_id": s.track_id,
        "iou_threshold": s.iou_threshold,
        "class_aware": s.class_aware,
        "source": str(path),
        "input": s.input,
        "unit": cfg.bootstrap.unit,
    }
    if path.suffix.lower() == ".csv":
        return read_samples_csv(path)
    from perception_safety.io.dataset import read_jsonl_frames

    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return samples_from_frames(read_jsonl_frames(path), **kw)
    if path.is_dir() or path.suffix.lower() in (".mcap", ".db3"):
        from perception_safety.io.bag import read_frames
        from perception_safety.io.bag_inputs import input_notes, select_bags, used

        found = select_bags([path], include_perfect, include_monitored)
        for note in input_notes(found):
            print(f"note: {note}", file=sys.stderr)
        bags = used(found)
        datasets = {b.path for b in found if b.is_dataset}

        def read(bag: Path):
            return read_jsonl_frames(bag) if bag in datasets else read_frames(bag, with_images=False)

        def frames():
            for bag in bags:
                yield from read(bag)

        from perception_safety.evaluation.pcd.samples import merge_samples

        if cfg.bootstrap.unit == "episode" or len(bags) > 1:  # one group source per bag
            return merge_samples(
                [samples_from_frames(read(b), **{**kw, "source": str(b)}) for b in bags],
                source=str(path),
            )
        return samples_from_frames(frames(), **kw)
    raise PerceptionSafetyError(f"{path}: unknown input type (expected .csv, .jsonl, a rosbag2 bag or a folder)")


def _labels(inputs: list[Path], given: list[str] | None) -> list[str]:
    if given:
        if len(given) != len(inputs):
            raise PerceptionSafetyError(f"--label given {len(given)} times for {len(inputs)} inputs")
        return given
    stems = [p.stem or p.name for p in inputs]
    return stems if len(set(stems)) == len(stems) else [str(p) for p in inputs]


def run(args: argparse.Namespace) -> int:
    """Compute PCD for every input and write JSON, a comparison table and figures."""
    from perception_safety.evaluation.pcd.bootstrap import bootstrap_pcd
    from perception_safety.evaluation.pcd.compute import PCDConfig, compute_pcd
    from perception_safety.evaluation.pcd.samples import INPUT_MEANING
    from perception_safety.io.config import load_model

    cfg = load_model(args.config, PCDConfig, section="pcd")
    updates: dict[str, Any] = {}
    if args.method:
        updates["method"] = args.method
    if args.model:
        updates["model"] = args.model
    if args.n_boot is not None:
        if args.n_boot < 0:
            raise PerceptionSafetyError(f"--n-boot must be >= 0, got {args.n_boot}")
        updates["bootstrap"] = cfg.bootstrap.model_copy(update={"n_boot": args.n_boot})
    sample_updates = {k: v for k, v in (("class_id", args.class_id), ("track_id", args.track_id)) if v is not None}
    if sample_updates:
        updates["samples"] = cfg.samples.model_copy(update=sample_updates)
    if updates:
        cfg = PCDConfig.model_validate({**cfg.model_dump(), **updates})
    inputs = [Path(p) for p in args.inputs]
    labels = _labels(inputs, args.label)
    results = []
    entries = []
    loaded = []
    for path, label in zip(inputs, labels, strict=True):
        samples = _load_samples(path, cfg, args.include_perfect_perception, args.include_monitored)
        if samples.n == 0:
            raise PerceptionSafetyError(f"{path}: no samples (no ground-truth target passed the class/track filter)")
        res = compute_pcd(samples.x, samples.y, cfg, what=str(path))
        unit = cfg.bootstrap.unit if samples.input != "csv" else "group"
        res = bootstrap_pcd(res, samples.x, samples.y, samples.group, cfg, unit)
        results.append((label, res))
        loaded.append((label, samples))
        entries.append(
            {
                "input": str(path),
                "label": label,
                "sample_input": samples.input,
                "sample_input_meaning": INPUT_MEANING.get(samples.input, ""),
                "n_missed": int(samples.missed.sum()),
                **res.to_dict(),
            }
        )
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerceptionSafetyError(f"{out}: cannot create output directory: {exc.strerror or exc}") from exc
    doc: dict[str, Any] = {
        "method": cfg.method,
        "config": cfg.model_dump(mode="json"),
        "grid_orientation": "grid.pcd[i][j] is the PCD (m) at y_t = grid.y_t[i], p_t = grid.p_t[j]",
        "inputs": entries,
    }
    doc["warnings"] = [
        {"analysis": "pcd", "input": e["label"], **w} for e in entries for w in e["warnings"]
    ]
    if len(entries) == 1:  # single input: its main values also at the top level
        for key in ("change_points", "grid", "mpcd", "pcd", "pcd_ci", "mpcd_ci", "model"):
            if key in entries[0]:
                doc[key] = entries[0][key]
    if args.write_samples:
        from perception_safety.evaluation.pcd.samples import write_samples_csv

        for label, samples in loaded:
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
            write_samples_csv(out / f"samples_{safe}.csv", samples)
    write_text(out / "pcd.json", json.dumps(doc, indent=1))
    with atomic_open((out / "pcd_table.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "label",
                "input",
                "n",
                "n_change_points",
                "change_points_m",
                f"pcd_m(y_t={cfg.y_t},p_t={cfg.p_t})",
                "pcd_ci_lo_m",
                "pcd_ci_hi_m",
                "mpcd_m",
                "mpcd_ci_lo_m",
                "mpcd_ci_hi_m",
                "model",
                "sample_input",
                "n_warnings",
            ]
        )
        for e in entries:
            cps = " ".join(f"{c:.3f}" for c in e["change_points"])
            ci = [f"{v:.3f}" for v in e.get("pcd_ci", ["", ""]) if v != ""] or ["", ""]
            mci = [f"{v:.3f}" for v in e.get("mpcd_ci", ["", ""]) if v != ""] or ["", ""]
            w.writerow(
                [
                    e["label"],
                    e["input"],
                    e["n"],
                    len(e["change_points"]),
                    cps,
                    f"{e['pcd']['value']:.3f}",
                    *ci,
                    f"{e['mpcd']:.3f}",
                    *mci,
                    e["model"],
                    e["sample_input"],
                    len(e["warnings"]),
                ]
            )
    if not args.no_plots:
        from perception_safety.report.pcd_plots import fits_figure, surfaces_figure

        fits_figure(results, out / "pcd_fit.svg")
        surfaces_figure(results, out / "pcd_surface.svg")
    width = max(len(lbl) for lbl in labels)
    level = f"{100 * cfg.bootstrap.level:g} % CI"
    print(
        f"{'input':<{width}}  {'n':>7}  {'#cp':>3}  {'PCD(m)':>9}  {level:>17}  {'mPCD(m)':>9}  {level:>17}  "
        f"method={cfg.method}"
    )
    for e in entries:
        ci = "[{:.1f}, {:.1f}]".format(*e["pcd_ci"]) if "pcd_ci" in e else "-"
        mci = "[{:.1f}, {:.1f}]".format(*e["mpcd_ci"]) if "mpcd_ci" in e else "-"
        print(
            f"{e['label']:<{width}}  {e['n']:>7}  {len(e['change_points']):>3}  "
            f"{e['pcd']['value']:>9.3f}  {ci:>17}  {e['mpcd']:>9.3f}  {mci:>17}"
        )
        print(f"  input: {e['sample_input']}; {e['model_choice']}")
        if "bootstrap" in e:
            b = e["bootstrap"]
            print(
                f"  bootstrap: {b['n_ok']}/{b['n_boot']} resamples of {b['n_groups']} {b['unit']}(s), seed {b['seed']}"
            )
        for seg in e["segments"]:
            print(f"  segment [{seg['lo_m']:.1f}, {seg['hi_m']:.1f}] m: n = {seg['n']}, sigma = {seg['sigma']:.4f}")
        for note in e["notes"]:
            print(f"  note: {note}")
        for warn in e["warnings"]:
            print(f"  warning [{warn['code']}]: {warn['message']}")
    print(f"wrote {out / 'pcd.json'}")
    return 0
