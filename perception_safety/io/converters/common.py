"""What every converter reports: counts of what it skipped or assumed, so nothing is dropped silently."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from perception_safety.errors import PerceptionSafetyError


class ConversionError(PerceptionSafetyError):
    """An input file of a converter is unreadable or malformed (the message names file and line or key)."""


@dataclass
class ConversionReport:
    """Frames and objects written, objects skipped by reason, class names mapped, and assumptions made."""

    frames: int = 0
    ground_truth: int = 0
    detections: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    ignore_regions: Counter[str] = field(default_factory=Counter)
    """Ignore regions kept (KITTI DontCare, COCO iscrowd) by kind: not objects, detections there count neither way."""
    classes: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary, one fact per line."""
        out = [f"{self.frames} frames, {self.ground_truth} ground-truth objects, {self.detections} detections"]
        out += [f"skipped {n} {reason}" for reason, n in sorted(self.skipped.items())]
        out += [f"kept {n} {kind} as ignore regions (detections inside count neither as true nor as false positives)"
                for kind, n in sorted(self.ignore_regions.items())]
        if self.classes:
            out.append("classes: " + ", ".join(f"{k} -> {v}" for k, v in sorted(self.classes.items())))
        out += self.notes
        return out


def class_name(raw: str, mapping: dict[str, str], report: ConversionReport) -> str:
    """The dataset's class name under ``mapping`` (default: lower case, the package's convention), recorded."""
    name = mapping.get(raw, raw.lower())
    report.classes[raw] = name
    return name
