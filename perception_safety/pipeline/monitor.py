"""`perception-safety monitor`: the safety_monitor node's own monitors over recorded frames, without DDS.

Frames come from the shared bag reader (`io.bag.read_frames`) with the node's topics and pairing: a detections
message is judged with the image of the same stamp (within ``slop``); one without an image is counted, not judged,
as the node would not pair it. The node reads no ground truth, so none is given to the monitors here; the ego
speed (a braking corridor's far edge) comes from the odometry of the same stamp when the node's params name an
odometry topic (online: the latest odometry, at most ``silence.odometry_timeout_s`` old). Each bag is one
episode: the monitors start fresh. Per-frame verdicts and the summary are written by `write_outputs`;
`monitor_bag` is the per-bag step a shared per-bag pass can call; `monitor_dataset` judges a JSON Lines dataset's
frames (detections only) the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perception_safety.core.types import Frame
from perception_safety.io.bag import BagReadReport, BagTopics, read_frames
from perception_safety.io.dataset import DatasetReadReport, read_jsonl_frames
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.suite import MonitorSuite
from perception_safety.monitors.verdicts import FrameVerdict, VerdictSummary, judge_frames

OUTPUT_FORMAT = "perception_safety.monitor/1"


@dataclass(frozen=True)
class MonitorSettings:
    """What the node would run with: its monitors, stop policy, topics and pairing."""

    monitors: MonitorsConfig = field(default_factory=MonitorsConfig)
    fail_safe_stop: bool = True
    stop_on_monitor_alarm: bool = True
    use_image: bool = True
    image_topic: str = "/camera/image_raw"
    camera_info_topic: str = "/camera/camera_info"
    detections_topic: str = "/detections"
    odometry_topic: str = ""
    """The ego speed for a braking corridor ('' = none, as the node without ``topics.odometry``)."""
    slop_ns: int = 0


@dataclass
class BagVerdicts:
    """One bag's verdicts, summary and what was not judged."""

    bag: str
    verdicts: list[FrameVerdict] = field(default_factory=list)
    summary: VerdictSummary = field(default_factory=VerdictSummary)
    unpaired: int = 0
    labels: dict[str, int] = field(default_factory=dict)


def _topics(s: MonitorSettings) -> BagTopics:
    return BagTopics(image=s.image_topic if s.use_image else "", camera_info=s.camera_info_topic if s.use_image
                     else "", detections=s.detections_topic, candidates="", ground_truth="", ego=s.odometry_topic,
                     monitor_results="", anchor="detections")


def monitor_bag(bag: str | Path, settings: MonitorSettings, report: BagReadReport | None = None) -> BagVerdicts:
    """The node's verdict on every frame of one bag (`RegionError` when the camera does not fit the regions)."""
    out = BagVerdicts(str(bag))

    def paired() -> Iterator[Any]:
        for frame in read_frames(bag, _topics(settings), settings.slop_ns, settings.use_image, report):
            for d in frame.detections:
                out.labels[d.class_id] = out.labels.get(d.class_id, 0) + 1
            if settings.use_image and frame.image is None:
                out.unpaired += 1
                continue
            yield replace(frame, ground_truth=(), candidates=None)

    suite = MonitorSuite(settings.monitors)
    for verdict in judge_frames(paired(), suite, settings.fail_safe_stop, settings.stop_on_monitor_alarm):
        out.verdicts.append(verdict)
        out.summary.add(verdict)
    return out


def monitor_dataset(path: str | Path, settings: MonitorSettings,
                    report: DatasetReadReport | None = None) -> list[BagVerdicts]:
    """The node's verdicts on a JSON Lines dataset (`io.dataset`), one part per ``episode`` key, each starting fresh.

    A dataset carries boxes but no image and no CameraInfo: it is judged as the node runs with ``use_image: false``
    (the contrast monitor reports STALE), on the camera of ``monitors.camera`` (``--camera``); without one the
    regions cannot be placed (`RegionError`). Unreadable lines are skipped and counted in ``report``."""
    episodes: dict[str, list[Frame]] = {}
    keep_ego = bool(settings.odometry_topic)
    for frame in read_jsonl_frames(path, skip_bad=True, report=report):
        episodes.setdefault(frame.episode, []).append(
            replace(frame, ground_truth=(), candidates=None, ego=frame.ego if keep_ego else None))
    parts = []
    for episode, frames in episodes.items():
        part = BagVerdicts(f"{path}#{episode}" if episode else str(path))
        for f in frames:
            for d in f.detections:
                part.labels[d.class_id] = part.labels.get(d.class_id, 0) + 1
        suite = MonitorSuite(settings.monitors)
        for verdict in judge_frames(frames, suite, settings.fail_safe_stop, settings.stop_on_monitor_alarm):
            part.verdicts.append(verdict)
            part.summary.add(verdict)
        parts.append(part)
    return parts


def total(parts: Sequence[BagVerdicts]) -> VerdictSummary:
    """The summary over every bag."""
    t = VerdictSummary()
    for p in parts:
        for v in p.verdicts:
            t.add(v)
    return t


def summary_doc(parts: Sequence[BagVerdicts], warnings: Sequence[str], config: str, camera: str) -> dict[str, Any]:
    """``summary.json``: per bag and overall counts, the warnings, what was run."""
    return {
        "format": OUTPUT_FORMAT,
        "complete": True,
        "config": config,
        "camera": camera,
        "total": total(parts).to_dict(),
        "bags": [{"bag": p.bag, **p.summary.to_dict(), "unpaired_detections": p.unpaired} for p in parts],
        "warnings": list(warnings),
    }


def write_outputs(out: Path, parts: Sequence[BagVerdicts], doc: dict[str, Any]) -> tuple[Path, Path]:
    """``out/verdicts.jsonl`` (one object per frame, with its bag) and ``out/summary.json``, each written whole."""
    from perception_safety.safe_io.atomic_write import write_text

    lines = [json.dumps({**v.record(), "bag": p.bag}) for p in parts for v in p.verdicts]
    verdicts = write_text(out / "verdicts.jsonl", "".join(line + "\n" for line in lines))
    summary = write_text(out / "summary.json", json.dumps(doc, indent=1) + "\n")
    return verdicts, summary
