"""``perception-safety monitor BAG... --config monitors.yaml --out DIR``: the safety_monitor node's verdicts offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "monitor",
        help="run the safety_monitor node's monitors and stop rule over recorded bags (no DDS)",
        description="Judges every frame of the bags exactly as the safety_monitor node does (the same monitor "
        "objects, the same message decoding and image/detections pairing), as fast as the bags can be read. Writes "
        "DIR/verdicts.jsonl (stamp_ns, level, stop, alarms, reasons per frame) and DIR/summary.json. Regions are "
        "placed on the camera of the frames (image size, the bag's CameraInfo, else --camera); a region that does "
        "not fit that camera is a configuration error (exit 2).",
    )
    p.add_argument("bags", nargs="+", metavar="BAG", help="rosbag2 directories, folders searched for them, or JSON "
                   "Lines datasets (.jsonl/.ndjson, as `convert` writes: detections only, judged as the node with "
                   "use_image: false; give their camera with --camera)")
    p.add_argument("--config", default="config/monitors.yaml",
                   help="YAML with a 'monitors' section (config/monitors.yaml), or the node's ROS 2 params file "
                   "(config/safety_monitor.yaml: monitors, stop policy, topics and pairing as the node reads them)")
    p.add_argument("--node", default="safety_monitor", help="section of a params file to read (safety_monitor)")
    p.add_argument("--camera", metavar="WxH|YAML", default=None,
                   help="the camera when the bag carries no CameraInfo: an image size WIDTHxHEIGHT, or a camera "
                   "calibration YAML (image_width, image_height, camera_matrix) for metric regions")
    p.add_argument("--out", type=Path, required=True, help="output folder (verdicts.jsonl, summary.json)")
    p.set_defaults(func=run)


def _settings(path: Path, node: str) -> Any:
    from perception_safety.io.config import ConfigError, load_yaml, model_from_mapping
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.pipeline.monitor import MonitorSettings

    data = load_yaml(path)
    if "monitors" in data:
        return MonitorSettings(model_from_mapping(data["monitors"] or {}, MonitorsConfig, str(path), "monitors"))
    section = data.get(node)
    if not isinstance(section, dict) or not isinstance(section.get("ros__parameters"), dict):
        raise ConfigError(f"{path}: neither a 'monitors' section nor a '{node}.ros__parameters' section "
                          f"(top-level keys: {', '.join(sorted(data)) or 'none'})")
    from perception_safety.ros.safety_monitor_params import SafetyMonitorParams

    p = model_from_mapping(section["ros__parameters"], SafetyMonitorParams, str(path), f"{node}.ros__parameters")
    return MonitorSettings(p.monitors, p.fail_safe_stop, p.stop_on_monitor_alarm, p.use_image, p.topics.image,
                           p.topics.camera_info, p.topics.detections, p.topics.odometry, round(p.sync.slop_s * 1e9))


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from perception_safety.core.labels import LabelMatcher, unmatched_warning
    from perception_safety.io.bag import BagReadReport, find_bags
    from perception_safety.io.camera_file import camera_mount_with
    from perception_safety.io.dataset import DATASET_SUFFIXES, DatasetReadReport
    from perception_safety.io.paths import resolve_file
    from perception_safety.monitors.regions.resolve import RegionError
    from perception_safety.monitors.suite import region_warnings
    from perception_safety.pipeline.monitor import monitor_bag, monitor_dataset, summary_doc, write_outputs

    config = resolve_file(args.config, "--config")
    settings = _settings(config, args.node)
    if args.camera:
        mount = camera_mount_with(settings.monitors.camera, args.camera)
        settings = replace(settings, monitors=settings.monitors.model_copy(update={"camera": mount}))
    report, dataset_report = BagReadReport(), DatasetReadReport()
    datasets = [a for a in args.bags if Path(a).suffix in DATASET_SUFFIXES and Path(a).is_file()]
    bags = [a for a in args.bags if a not in datasets]
    parts = []
    for bag in find_bags(bags) if bags else []:
        try:
            parts.append(monitor_bag(bag, settings, report))
        except RegionError as exc:
            raise RegionError(f"{bag}: monitor regions do not fit the camera: {exc}") from exc
    for path in datasets:
        try:
            parts += monitor_dataset(path, settings, dataset_report)
        except RegionError as exc:
            raise RegionError(f"{path}: monitor regions do not fit the camera: {exc}") from exc
    warnings = [line for line in report.summary_lines()[1:]] + region_warnings(settings.monitors)
    warnings += [f"{where}:{line}: skipped: {why}" for (where, line), why in sorted(dataset_report.skipped.items())]
    if datasets:
        warnings.append(f"{len(datasets)} JSON Lines dataset(s): no images, so the contrast monitor cannot judge "
                        "their frames (STALE), as the node with use_image: false")
    warnings += [f"{p.bag}: {p.unpaired} detections message(s) without an image of the same stamp: not judged (the "
                 "node would not pair them)" for p in parts if p.unpaired]
    labels: dict[str, int] = {}
    for p in parts:
        for k, n in p.labels.items():
            labels[k] = labels.get(k, 0) + n
    watched = LabelMatcher(settings.monitors.stop_region.watched_classes
                           + settings.monitors.plausibility.watched_classes)
    unwatched = unmatched_warning(labels, watched, "detections")
    warnings += [unwatched] if unwatched else []
    doc = summary_doc(parts, warnings, str(config), args.camera or "from each bag's frames")
    if doc["total"]["frames"] == 0:
        warnings.append("no frame was judged: nothing to monitor (check the topics and the pairing)")
        doc["warnings"] = warnings
    verdicts, summary = write_outputs(args.out, parts, doc)
    _print(doc)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {verdicts} and {summary}")
    return 0


def _print(doc: dict[str, Any]) -> None:
    t = doc["total"]
    print(f"{len(doc['bags'])} bag(s), {t['frames']} frames judged: alarm on {t['alarm_frames']}, stop on "
          f"{t['stops']}; levels " + ", ".join(f"{k} {v}" for k, v in t["levels"].items()))
    print(f"  {'monitor':<14}{'alarms':>8}{'OK':>8}{'WARN':>8}{'ERROR':>8}{'STALE':>8}")
    for name, row in t["per_monitor"].items():
        print(f"  {name:<14}" + "".join(f"{row[k]:>8}" for k in ("alarms", "OK", "WARN", "ERROR", "STALE")))
