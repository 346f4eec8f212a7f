"""Frame references of the per-bag pass (`evaluation.evidence`): map per bag, reduce over bags, results block.

Each reference names its frame as (bag, image topic, stamp) plus the episode and the time into the bag, so the
report, ``perception-safety frames`` and ``render --frames`` can find the picture again by seeking that stamp.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.bbsl_testing import TestCase
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.evidence import (
    EvidenceCollector,
    collect_alarms,
    collect_bbsl,
    collect_confusion,
    collect_stops,
    merge_cells,
)
from perception_safety.io.bag import BagError, BagTopics
from perception_safety.io.bag_inputs import bag_metadata
from perception_safety.monitors.regions.resolve import RegionError
from perception_safety.pipeline.bag_pass import EpisodeFrames, episode_entries
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.pipeline.run_state import load_complete_results

DEFINITIONS = {
    "cells": "cm:<pred>:<true>@<lo>-<hi> class-labeled confusion cell (pred 'empty' = missed object); "
    "false:<class> detection matched to no ground truth; false_stop / missed_stop the stop-region rule on the "
    "detections disagrees with the rule on the ground truth; bbsl:<spec>:<expected>-><actual> failed BBSL test case; "
    "alarm:<status> frame on which the recorded monitor status (verification.monitor_loop.status) alarmed",
    "refs": "at most per_cell frames per cell, most informative first: errors nearest object first, correct "
    "detections farthest first, false detections / false stops highest score first, alarms earliest first",
    "frame": "bag (folder), topic (image topic), stamp_ns (header stamp), t_s (seconds since the bag's first frame)",
}


def image_topic(bag: str | Path, topics: BagTopics, names: Collection[str] = ()) -> str:
    """The bag's image topic: ``topics.image`` or its ``/compressed`` transport, whichever is recorded (``names``:
    the bag's topic names when the caller has them, else read from its metadata)."""
    if not names:
        try:
            listed = bag_metadata(Path(bag)).get("topics_with_message_count") or []
            names = {t["topic_metadata"]["name"] for t in listed}
        except (BagError, KeyError, TypeError):
            names = set()
    compressed = topics.image + "/compressed"
    return compressed if compressed in names and topics.image not in names else topics.image


def evidence_part(ep: EpisodeFrames, cfg: EvaluateConfig, bbsl: Mapping[str, Mapping[str, Any]] | None = None,
                  batch: FrameBatch | None = None) -> dict[str, Any]:
    """One episode's references (JSON), each carrying bag, topic, episode and time. Alarms come from the verdicts
    the shared pass read (the ``verification.monitor_loop.status`` monitor), so the bag is not read again."""
    frames = ep.frames
    col = EvidenceCollector(cfg.evaluate.evidence_per_cell)
    collect_confusion(col, frames, cfg.confusion, batch)
    stops_note = None
    try:
        collect_stops(col, frames, cfg.monitors, cfg.bbsl.image_size)
    except RegionError as exc:  # e.g. a ground corridor on frames without a camera model: no stop evidence, named
        stops_note = str(exc)
    for spec, part in (bbsl or {}).items():
        collect_bbsl(col, spec, (TestCase(**tc) for tc in part.get("test_cases", [])), frames)
    if ep.verdicts is not None:
        collect_alarms(col, cfg.verification.monitor_loop.status, frames, ep.verdicts)
    doc = col.to_json()
    if stops_note:
        doc["stops_not_judged"] = stops_note
    topic = image_topic(ep.source, cfg.bags.topics, ep.topics)
    t0 = min((f.stamp_ns for f in frames), default=0)
    windows = ep.log_windows
    for cell in doc["cells"].values():
        for r in cell["refs"]:
            r.update(bag=ep.source, topic=topic, episode=ep.episode, t_s=round((r["stamp_ns"] - t0) / 1e9, 3))
            if (w := windows.get(r["stamp_ns"])) is not None:
                r["log_ns"] = list(w)  # the frame's recording window: the report's thumbnails seek it
    return doc


def reduce_evidence(partials: Sequence[Mapping[str, Any]], cfg: EvaluateConfig) -> dict[str, Any]:
    """The ``evidence`` block of results.json: definitions, the bound per cell and every cell's count and refs."""
    parts = [ep["evidence"] for _, ep in episode_entries(partials) if "evidence" in ep]
    per_cell = cfg.evaluate.evidence_per_cell
    block = {"definitions": DEFINITIONS, "per_cell": per_cell, "cells": merge_cells(parts, per_cell)}
    unjudged = [(ep.get("episode") or bag, ep["evidence"]["stops_not_judged"]) for bag, ep in episode_entries(partials)
                if "stops_not_judged" in ep.get("evidence", {})]
    if unjudged:
        block["stops_not_judged"] = {"episodes": len(unjudged), "first": unjudged[0][0], "reason": unjudged[0][1]}
    return block


class EvidenceError(PerceptionSafetyError):
    """A results file without evidence, or a cell it does not have (the message lists the cells it has)."""


def read_cell(run: str | Path, cell: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(evidence block, cell)`` of an evaluate run (folder or results.json); ``cell`` None gives ``{}``."""
    path = Path(run)
    path = path / "results.json" if path.is_dir() else path
    doc = load_complete_results(path)  # a finished run's results only (issue 25 item 7); bounded, errors named
    block = doc.get("evidence")
    if not isinstance(block, dict) or not isinstance(block.get("cells"), dict):
        raise EvidenceError(f"{path}: no 'evidence' block (a run of an older version, or evaluate.evidence_per_cell "
                            "was 0): rerun evaluate")
    if cell is None:
        return block, {}
    if cell not in block["cells"]:
        near = [k for k in block["cells"] if cell.split("@")[0] in k] or list(block["cells"])
        raise EvidenceError(f"{path}: no cell {cell!r}; cells with frames: {', '.join(near[:30])}")
    return block, block["cells"][cell]
