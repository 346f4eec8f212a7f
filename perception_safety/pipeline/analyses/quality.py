"""Evaluate step: the data-quality section (frames, skipped messages, unmatched, missing topics per bag)."""

from __future__ import annotations

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced


def run(ev: Evaluation, red: Reduced) -> None:
    sec = ev.report.section("Data quality")
    rows = []
    for bag, r in red.read_reports.items():
        unmatched = ", ".join(f"{t}: {n}" for t, n in r["unmatched"].items()) or "0"
        rows.append([bag, r["frames"], len(r["skipped"]), unmatched, ", ".join(r["missing_topics"]) or "-"])
    sec.table(["bag", "frames (n)", "malformed skipped (n)", "unmatched messages", "missing topics"], rows)
    for bag, r in red.read_reports.items():
        for topic, index, reason in r["skipped"][:20]:
            sec.text(f"{bag}: {topic} message #{index}: {reason}", "warn")
