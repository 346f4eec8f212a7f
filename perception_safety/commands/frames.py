"""``perception-safety frames RESULTS [CELL]``: the frames behind a count of an evaluation (its evidence)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "frames",
        help="list or extract the frames behind a confusion cell, false stop, BBSL failure or alarm of a run",
        description="Reads RESULTS/results.json of an 'evaluate' run. Without CELL: every cell with its count and "
        "how many frame references it keeps. With CELL (e.g. 'cm:empty:ped@0-10', 'false_stop', 'false:ped'): one "
        "line per frame (bag, topic, stamp, episode, time, what). With --extract DIR: each frame seeked in its bag "
        "and drawn with ground truth, detections, matched/missed/false markers, regions and legend, as PNG.",
    )
    p.add_argument("results", metavar="RESULTS", type=Path, help="'evaluate' output folder (or its results.json)")
    p.add_argument("cell", metavar="CELL", nargs="?", default=None, help="cell key (omit to list the cells)")
    p.add_argument("--extract", metavar="DIR", type=Path, default=None,
                   help="write the frames here (PNG; JPEG with --crop)")
    p.add_argument("--crop", action="store_true", help="with --extract: cut around the object (thumbnail)")
    p.add_argument("--width", type=int, default=0, help="with --extract: scale to this width (default: full size)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.pipeline.evidence import read_cell

    block, cell = read_cell(args.results, args.cell)
    if args.cell is None:
        print(f"{len(block['cells'])} cells (at most {block.get('per_cell')} frames kept each):")
        for key, c in block["cells"].items():
            print(f"  {key}: {c['count']} occurrence(s), {len(c['refs'])} frame(s)")
        return 0
    print(f"{args.cell}: {cell['count']} occurrence(s), {len(cell['refs'])} frame(s) kept, most informative first")
    for r in cell["refs"]:
        dist = f" {r['distance_m']:.1f} m" if r.get("distance_m") is not None else ""
        print(f"  {r['bag']} {r['topic']} {r['stamp_ns']}  episode {r['episode']} t = {r['t_s']:.2f} s  "
              f"{r['kind']} {r.get('label', '')}{dist}  {r.get('detail', '')}".rstrip())
    if args.extract is not None:
        _extract(args, cell["refs"])
    return 0


def _extract(args: argparse.Namespace, refs: list) -> None:
    from perception_safety.pipeline.evaluate_config import EvaluateConfig
    from perception_safety.pipeline.run_state import load_complete_results
    from perception_safety.report.overlay import TruthStyle
    from perception_safety.report.thumbnails import thumbnails
    from perception_safety.safe_io import write_bytes

    path = args.results / "results.json" if args.results.is_dir() else args.results
    doc = load_complete_results(path)
    cfg = EvaluateConfig.model_validate(doc["config"]) if isinstance(doc.get("config"), dict) else EvaluateConfig()
    truth = TruthStyle(cfg.confusion.iou_threshold, cfg.confusion.class_aware)
    thumbs = thumbnails(refs, cfg.bags.topics, cfg.monitors, truth, len(refs), args.width or 0,
                        cfg.bags.tolerance_ns, crop=args.crop)
    out: Path = args.extract
    out.mkdir(parents=True, exist_ok=True)
    ext = "jpg" if args.crop else "png"
    written = 0
    for i, t in enumerate(thumbs):
        if t.jpeg is None:
            print(f"  no picture for {t.alt}: {t.missing}")
            continue
        write_bytes(out / f"{i:02d}_{Path(str(t.ref['bag'])).parent.name}_{t.ref['stamp_ns']}.{ext}", t.jpeg)
        written += 1
    print(f"wrote {written} frame(s) to {out}")
