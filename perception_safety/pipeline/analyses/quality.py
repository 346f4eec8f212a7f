"""Evaluate step: the data-quality section (per bag: frames, skipped messages, unmatched, missing topics, and
the reason a bag could not be evaluated at all)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced


def data_quality(bags: Sequence[str | Path], red: Reduced) -> dict[str, dict[str, Any]]:
    """``results.json["data_quality"]``: one entry per input bag, in input order; ``failed`` is null or why."""
    out: dict[str, dict[str, Any]] = {}
    for bag in map(str, bags):
        if bag in red.failed:
            out[bag] = {"frames": 0, "skipped": [], "unmatched": {}, "missing_topics": [], "failed": red.failed[bag]}
        elif bag in red.read_reports:
            out[bag] = {**red.read_reports[bag], "failed": None}
    return out


def run(ev: Evaluation, red: Reduced) -> None:
    sec = ev.report.section("Data quality")
    rows = []
    for bag, r in red.read_reports.items():
        unmatched = ", ".join(f"{t}: {n}" for t, n in r["unmatched"].items()) or "0"
        rows.append([bag, r["frames"], len(r["skipped"]), unmatched, ", ".join(r["missing_topics"]) or "-"])
    for bag, reason in red.failed.items():
        rows.append([bag, 0, "-", "-", f"not evaluated: {reason}"])
    sec.table(["bag", "frames (n)", "malformed skipped (n)", "unmatched messages", "missing topics"], rows)
    for bag, reason in red.failed.items():
        ev.warn("data_quality", f"{bag}: bag skipped, the other bags were evaluated: {reason}", "bag_failed")
    from perception_safety.evaluation.ground_truth_screen import screen_warnings

    for text in screen_warnings(red.screened):
        ev.warn("data_quality", text, "ground_truth_screened")
    for bag, r in red.read_reports.items():
        for topic, index, reason in r["skipped"][:20]:
            sec.text(f"{bag}: {topic} message #{index}: {reason}", "warn")
