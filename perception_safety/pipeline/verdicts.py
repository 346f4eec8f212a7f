"""The evaluate map/reduce for the monitor in the loop: per bag, the confusion counts split by the verdict.

Map: join the bag's per-frame monitor status (``bags.topics.monitor_results``, the status named
``verification.monitor_loop.status``) to its frames by stamp and accumulate the counts per verdict
(`evaluation.confusion.by_verdict`). A bag without the topic or the status contributes nothing and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.by_verdict import VerdictSplit, split_by_verdict, sum_splits
from perception_safety.evaluation.confusion.io import confusion_from_mapping, to_json_dict
from perception_safety.io.bag import BagError, read_monitor_results
from perception_safety.pipeline.evaluate_config import EvaluateConfig


def verdict_partial(bag: str, frames: Sequence[Frame], cfg: EvaluateConfig) -> dict[str, Any]:
    """The bag's counts per verdict, or ``{"missing": reason}`` when it carries no usable verdict."""
    name = cfg.verification.monitor_loop.status
    try:
        statuses = read_monitor_results(bag, cfg.bags.topics)
    except BagError as exc:
        return {"missing": str(exc)}
    by_stamp: dict[int, bool] = {}
    for stamp, results in statuses:
        for r in results:
            if r.name == name:
                by_stamp[int(stamp)] = bool(r.alarm)
    if not by_stamp:
        return {"missing": f"{bag}: no status named {name!r} on {cfg.bags.topics.monitor_results}"}
    split = split_by_verdict(frames, [by_stamp.get(int(f.stamp_ns)) for f in frames], cfg.confusion, bag)
    return {
        "no_alarm": to_json_dict(split.no_alarm),
        "alarm": to_json_dict(split.alarm),
        "frames_with_verdict": split.frames_with_verdict,
        "frames_without_verdict": split.frames_without_verdict,
    }


def reduce_verdicts(partials: Sequence[dict[str, Any]]) -> tuple[VerdictSplit | None, list[str]]:
    """The sum over bags that carry verdicts, and one note per bag that does not."""
    parts, notes = [], []
    for p in partials:
        v = p.get("verdicts")
        if v is None:
            continue
        if "missing" in v:
            notes.append(v["missing"])
            continue
        parts.append(VerdictSplit(confusion_from_mapping(v["no_alarm"], p["bag"]),
                                  confusion_from_mapping(v["alarm"], p["bag"]),
                                  int(v["frames_with_verdict"]), int(v["frames_without_verdict"])))
    return (sum_splits(parts, ", ".join(p["bag"] for p in partials)) if parts else None), notes
