"""The evaluate map/reduce for the monitor in the loop: per bag, the confusion counts split by the verdict.

Map: the pass (`bag_pass`) joins the bag's per-frame monitor status (``bags.topics.monitor_results``, the status
named ``verification.monitor_loop.status``) to its frames by stamp; the counts per verdict come from the frames'
one columnar batch split by verdict (as `evaluation.confusion.by_verdict`). A bag without the topic or the status
contributes nothing and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.by_verdict import VerdictSplit, sum_splits
from perception_safety.evaluation.confusion.io import confusion_from_mapping
from perception_safety.pipeline.bag_pass import EpisodeFrames, episode_entries
from perception_safety.pipeline.breakdowns import PendingCounts, confusion_part
from perception_safety.pipeline.evaluate_config import EvaluateConfig


def verdict_part(ep: EpisodeFrames, batch: FrameBatch, cfg: EvaluateConfig,
                 pending: PendingCounts | None = None) -> dict[str, Any]:
    """The episode's counts per verdict from its one batch, or ``{"missing": reason}`` without verdicts
    (``pending``: counted when it flushes, with the episode's other selections)."""
    if ep.verdicts is None:
        return {"missing": ep.verdicts_missing}
    verdicts = np.array([-1 if v is None else int(v) for v in ep.verdicts], dtype=np.int64)
    parts = {
        key: confusion_part(batch, cfg, ep.source, verdicts == value, pending=pending)
        for key, value in (("no_alarm", 0), ("alarm", 1))
    }
    known = int((verdicts >= 0).sum())
    return {**parts, "frames_with_verdict": known, "frames_without_verdict": len(verdicts) - known}


def reduce_verdicts(partials: Sequence[dict[str, Any]]) -> tuple[VerdictSplit | None, list[str]]:
    """The sum over bags that carry verdicts, and one note per bag that does not."""
    parts, notes = [], []
    for bag, ep in episode_entries(partials):
        v = ep.get("verdicts")
        if v is None:
            continue
        if "missing" in v:
            if v["missing"] not in notes:  # a dataset's episodes share one reason
                notes.append(v["missing"])
            continue
        parts.append(VerdictSplit(confusion_from_mapping(v["no_alarm"], bag),
                                  confusion_from_mapping(v["alarm"], bag),
                                  int(v["frames_with_verdict"]), int(v["frames_without_verdict"])))
    return (sum_splits(parts, ", ".join(p["bag"] for p in partials)) if parts else None), notes
