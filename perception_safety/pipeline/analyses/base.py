"""What every analysis step shares: the evaluation under construction, warnings, formatting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perception_safety.report.html import Report


@dataclass
class Evaluation:
    """What the analyses produced: the JSON document, the report being built and the warnings raised.

    Every surprise (an empty bin, an unmapped label, a value that is 0 for a reason) goes through `warn`, which
    puts it in ``results["warnings"]``, at the top of the report and on the console.
    """

    results: dict[str, Any]
    report: Report
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[dict[str, str]] = field(default_factory=list)

    def warn(self, analysis: str, message: str, code: str = "") -> None:
        """Record one warning of ``analysis`` (e.g. 'confusion'); ``code`` is a stable machine-readable key."""
        entry = {"analysis": analysis, "code": code or "warning", "message": message}
        if entry not in self.warnings:
            self.warnings.append(entry)
            self.report.add_warning(analysis, message, entry["code"])


def pct(v: float | None) -> str:
    """A rate as a percentage with one decimal, 'n/a' when undefined."""
    return "n/a" if v is None else f"{100 * v:.1f} %"
