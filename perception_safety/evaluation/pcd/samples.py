"""PCD samples ``(x = distance, y = IoU x confidence)`` per ground-truth target (paper Section 4.1).

Each frame's detections are matched to its ground truth with the package's one matching rule
(`perception_safety.core.match_frame`, Hungarian on IoU); a target's ``y`` is the IoU of its matched
detection times that detection's score, 0 when it is missed. Filters keep one class and/or one track
(the paper follows a single target). Samples are returned sorted stably by distance.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perception_safety.core import Frame, match_frame
from perception_safety.errors import PerceptionSafetyError


class SampleError(PerceptionSafetyError):
    """A sample file is unreadable or malformed (the message names file and line)."""


@dataclass(frozen=True)
class PCDSamples:
    """Samples sorted by distance; ``missed`` marks targets no detection matched."""

    x: np.ndarray
    y: np.ndarray
    missed: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.x.shape == self.y.shape == self.missed.shape) or self.x.ndim != 1:
            raise ValueError("x, y and missed must be 1-D arrays of equal length")

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.x.size)


def _sorted(x: list[float], y: list[float], missed: list[bool], source: str) -> PCDSamples:
    xa = np.asarray(x, dtype=float)
    order = np.argsort(xa, kind="stable")
    return PCDSamples(xa[order], np.asarray(y, dtype=float)[order], np.asarray(missed, dtype=bool)[order], source)


def samples_from_frames(
    frames: Iterable[Frame],
    class_id: str | None = None,
    track_id: str | None = None,
    iou_threshold: float = 0.0,
    class_aware: bool = False,
    source: str = "",
) -> PCDSamples:
    """One sample per kept ground-truth object per frame: ``y = IoU x score`` of its match, else 0."""
    xs: list[float] = []
    ys: list[float] = []
    missed: list[bool] = []
    for frame in frames:
        if not frame.ground_truth:
            continue
        matching = match_frame(frame, iou_threshold=iou_threshold, class_aware=class_aware)
        det_for_gt = matching.detection_for_gt()
        iou_for_gt = np.zeros(len(frame.ground_truth))
        iou_for_gt[matching.gt_indices] = matching.ious
        for g, gt in enumerate(frame.ground_truth):
            if class_id is not None and gt.class_id != class_id:
                continue
            if track_id is not None and gt.track_id != track_id:
                continue
            d = int(det_for_gt[g])
            xs.append(float(gt.distance))
            if d < 0:
                ys.append(0.0)
                missed.append(True)
            else:
                ys.append(float(iou_for_gt[g]) * float(frame.detections[d].score))
                missed.append(False)
    return _sorted(xs, ys, missed, source)


def merge_samples(parts: Iterable[PCDSamples], source: str = "") -> PCDSamples:
    """Reduce step for per-bag/per-episode maps: concatenate in order, then sort stably by distance."""
    parts = list(parts)
    if not parts:
        return PCDSamples(np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool), source)
    x = np.concatenate([p.x for p in parts])
    order = np.argsort(x, kind="stable")
    y = np.concatenate([p.y for p in parts])[order]
    missed = np.concatenate([p.missed for p in parts])[order]
    return PCDSamples(x[order], y, missed, source or ",".join(p.source for p in parts))


def read_samples_csv(path: str | Path) -> PCDSamples:
    """CSV with header columns ``distance_m`` and ``y`` (other columns ignored); errors name file:line."""
    path = Path(path)
    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise SampleError(f"{path}: cannot read samples: {exc.strerror or exc}") from exc
    xs: list[float] = []
    ys: list[float] = []
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise SampleError(f"{path}: empty file (expected a header with distance_m,y)") from None
        names = [h.strip() for h in header]
        missing = [c for c in ("distance_m", "y") if c not in names]
        if missing:
            raise SampleError(f"{path}:1: missing column(s) {', '.join(missing)} (header: {','.join(names)})")
        ix, iy = names.index("distance_m"), names.index("y")
        for lineno, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) <= max(ix, iy):
                raise SampleError(f"{path}:{lineno}: expected at least {max(ix, iy) + 1} columns, got {len(row)}")
            for col, name, out in ((ix, "distance_m", xs), (iy, "y", ys)):
                text = row[col].strip()
                try:
                    value = float(text)
                except ValueError:
                    raise SampleError(f"{path}:{lineno}: column {name}: not a number: {text!r}") from None
                if not np.isfinite(value):
                    raise SampleError(f"{path}:{lineno}: column {name}: not finite: {text!r}")
                out.append(value)
            if xs[-1] < 0:
                raise SampleError(f"{path}:{lineno}: column distance_m: negative distance {xs[-1]}")
    missed = [v == 0.0 for v in ys]
    return _sorted(xs, ys, missed, str(path))


def write_samples_csv(path: str | Path, samples: PCDSamples) -> None:
    """Write ``distance_m,y,missed`` (the format `read_samples_csv` reads)."""
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["distance_m", "y", "missed"])
        for x, y, m in zip(samples.x, samples.y, samples.missed, strict=True):
            w.writerow([repr(float(x)), repr(float(y)), int(bool(m))])
