"""``perception-safety convert``: KITTI or COCO-style files to the JSON Lines dataset the other commands read.

    perception-safety convert kitti training/label_2 --detections results/data --out kitti.jsonl
    perception-safety convert coco instances_val.json --results detections.json --distance-key depth --out c.jsonl
    perception-safety convert nuscenes v1.0-mini --results results_nusc.json --out nusc.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from perception_safety.errors import PerceptionSafetyError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert",
        help="convert KITTI labels, COCO-style JSON or nuScenes tables to the JSON Lines dataset",
        description="Convert public dataset formats to the JSON Lines dataset (one frame per line) that "
        "confusion, pcd, bbsl test and evaluate-style analyses read. Class names are lower-cased "
        "(the package's convention: 'Pedestrian' -> 'pedestrian') unless --class-map says otherwise.",
    )
    kinds = p.add_subparsers(dest="kind", metavar="FORMAT", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--out", metavar="FILE", required=True,
            help="JSON Lines file to write (replaced atomically; a missing folder is created)",
        )
        sp.add_argument(
            "--class-map",
            metavar="FROM=TO",
            action="append",
            default=[],
            help="rename a class, e.g. Person_sitting=pedestrian (repeatable; default: lower case)",
        )

    k = kinds.add_parser("kitti", help="KITTI object labels (label_2 folder) and optional detection files")
    k.add_argument("labels", metavar="LABEL_DIR", help="folder of KITTI label files (000000.txt, ...)")
    k.add_argument("--detections", metavar="DIR", help="folder of detection files in KITTI format (16th field score)")
    common(k)
    k.set_defaults(func=run)

    c = kinds.add_parser("coco", help="COCO-style ground truth (images/annotations/categories) and results")
    c.add_argument("ground_truth", metavar="GT_JSON", help="COCO-style ground-truth JSON")
    c.add_argument("--results", metavar="JSON", help="COCO results list: [{image_id, category_id, bbox, score}]")
    c.add_argument(
        "--distance-key", default="distance", help="annotation key holding the object's distance in metres"
    )
    c.add_argument(
        "--assume-distance",
        type=float,
        metavar="M",
        help="distance for annotations without the key (all such objects land in one bin; reported)",
    )
    common(c)
    c.set_defaults(func=run)

    n = kinds.add_parser(
        "nuscenes", help="nuScenes-format tables (sample, sample_annotation, ego_pose, ...) and a results JSON"
    )
    n.add_argument("tables", metavar="TABLE_DIR", help="folder of the nuScenes JSON tables (e.g. v1.0-mini)")
    n.add_argument("--results", metavar="JSON", help="detections in the nuScenes submission format")
    n.add_argument(
        "--keep-empty", action="store_true",
        help="keep annotations with no lidar/radar point (the benchmark drops them; so do we by default)",
    )
    common(n)
    n.set_defaults(func=run)


def _mapping(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        src, sep, dst = item.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise PerceptionSafetyError(f"--class-map {item!r}: expected FROM=TO, e.g. Pedestrian=pedestrian")
        out[src.strip()] = dst.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.converters import ConversionReport
    from perception_safety.io.dataset import write_jsonl_frames

    report = ConversionReport()
    mapping = _mapping(args.class_map)
    if args.kind == "kitti":
        from perception_safety.io.converters.kitti import convert_kitti

        frames = convert_kitti(args.labels, args.detections, mapping, report=report)
    elif args.kind == "nuscenes":
        from perception_safety.io.converters.nuscenes import convert_nuscenes

        frames = convert_nuscenes(args.tables, args.results, mapping, args.keep_empty, report=report)
    else:
        from perception_safety.io.converters.coco import convert_coco

        if args.assume_distance is not None and not args.assume_distance >= 0:
            raise PerceptionSafetyError(f"--assume-distance must be a distance >= 0 m, got {args.assume_distance}")
        frames = convert_coco(
            args.ground_truth, args.results, mapping, args.distance_key, args.assume_distance, report=report
        )
    out = Path(args.out)
    write_jsonl_frames(out, frames)  # atomic: refuses a device/FIFO/link; creates a missing output folder
    for line in report.lines():
        print(line)
    print(f"wrote {out}")
    return 0
