"""PCD samples ``(x = distance, y = IoU x confidence)`` per ground-truth target (paper Section 4.1).

Two inputs (``samples.input``):

* ``raw`` — the paper's (Section 5.1: "no confidence score threshold is applied; each model outputs the box
  with the highest confidence score"): the reported detections plus the recorded sub-threshold
  ``candidates``; each box goes to the target it overlaps most (IoU > 0, at least ``iou_threshold``, same
  class when class-aware), and a target's ``y`` is IoU x score of its highest-scoring box, 0 when none;
* ``thresholded`` — the reported detections only, matched with the package's one matching rule
  (`perception_safety.core.match_frame`, Hungarian on IoU); ``y`` = IoU x score of the match, 0 when missed.

``auto`` takes ``raw`` for every frame whose candidates were recorded. Filters keep one class and/or one
track (the paper follows a single target). Each sample carries a group id (its track within its source, or
the source) for the bootstrap. Samples are returned sorted stably by distance.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perception_safety.core import Frame
from perception_safety.evaluation.pcd.sample_table import SampleError, sample_table
from perception_safety.safe_io import atomic_open


@dataclass(frozen=True)
class PCDSamples:
    """Samples sorted by distance; ``missed`` marks targets no box matched; ``group`` the resampling unit
    of each sample (None: unknown); ``input`` which input they came from (raw, thresholded, mixed, csv)."""

    x: np.ndarray
    y: np.ndarray
    missed: np.ndarray
    source: str = ""
    group: np.ndarray | None = None
    input: str = ""

    def __post_init__(self) -> None:
        if not (self.x.shape == self.y.shape == self.missed.shape) or self.x.ndim != 1:
            raise ValueError("x, y and missed must be 1-D arrays of equal length")
        if self.group is not None and self.group.shape != self.x.shape:
            raise ValueError("group must have one id per sample")

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.x.size)


#: What each input means, for JSON and the report.
INPUT_MEANING = {
    "raw": "highest IoU x score of the target's boxes, detections and sub-threshold candidates (no score "
    "threshold, the paper's input)",
    "thresholded": "IoU x score of the target's matched reported detection (above the detector's threshold), "
    "0 when missed",
    "mixed": "raw where sub-threshold candidates were recorded, thresholded detections elsewhere",
    "csv": "the CSV's y column as given",
}


def _sorted(
    x: list[float], y: list[float], missed: list[bool], source: str, group: list[str] | None = None, input: str = ""
) -> PCDSamples:
    xa = np.asarray(x, dtype=float)
    order = np.argsort(xa, kind="stable")
    ga = None if group is None else np.asarray(group, dtype=object)[order]
    return PCDSamples(
        xa[order], np.asarray(y, dtype=float)[order], np.asarray(missed, dtype=bool)[order], source, ga, input
    )


def samples_from_frames(
    frames: Iterable[Frame],
    class_id: str | None = None,
    track_id: str | None = None,
    iou_threshold: float = 0.0,
    class_aware: bool = False,
    source: str = "",
    input: str = "auto",
    unit: str = "track",
) -> PCDSamples:
    """One sample per kept ground-truth object per frame (see the module docstring for the two inputs).

    ``unit`` sets the group ids: ``track`` = source and track id (the source when the object has none),
    ``episode`` = the source. ``input="raw"`` on a frame without recorded candidates is a `SampleError`.
    All frames at once (`sample_table`), then sorted stably by distance.
    """
    t = sample_table(frames, class_id, track_id, iou_threshold, class_aware, source, input, unit)
    order = np.argsort(t.x, kind="stable")
    return PCDSamples(t.x[order], t.y[order], t.missed[order], source, t.group[order], t.input)


def merge_samples(parts: Iterable[PCDSamples], source: str = "") -> PCDSamples:
    """Reduce step for per-bag/per-episode maps: concatenate in order, then sort stably by distance."""
    parts = list(parts)
    if not parts:
        return PCDSamples(np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool), source)
    x = np.concatenate([p.x for p in parts])
    order = np.argsort(x, kind="stable")
    y = np.concatenate([p.y for p in parts])[order]
    missed = np.concatenate([p.missed for p in parts])[order]
    group = None
    if all(p.group is not None for p in parts):
        group = np.concatenate([np.asarray(p.group, dtype=object) for p in parts])[order]
    kinds = {p.input for p in parts if p.input}
    kind = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "")
    return PCDSamples(x[order], y, missed, source or ",".join(p.source for p in parts), group, kind)


def read_samples_csv(path: str | Path) -> PCDSamples:
    """CSV with header columns ``distance_m`` and ``y`` and optionally ``group`` (the bootstrap's resampling
    unit: track or episode id; other columns ignored); errors name file:line."""
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
        ig = names.index("group") if "group" in names else None
        groups: list[str] | None = [] if ig is not None else None
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
            if groups is not None and ig is not None:
                if len(row) <= ig or not row[ig].strip():
                    raise SampleError(f"{path}:{lineno}: column group: empty (every sample needs its group id)")
                groups.append(row[ig].strip())
    missed = [v == 0.0 for v in ys]
    return _sorted(xs, ys, missed, str(path), groups, "csv")


def write_samples_csv(path: str | Path, samples: PCDSamples) -> None:
    """Write ``distance_m,y,missed[,group]`` (the format `read_samples_csv` reads)."""
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        groups = samples.group
        w.writerow(["distance_m", "y", "missed"] + (["group"] if groups is not None else []))
        for i, (x, y, m) in enumerate(zip(samples.x, samples.y, samples.missed, strict=True)):
            row = [repr(float(x)), repr(float(y)), int(bool(m))]
            w.writerow(row + ([str(groups[i])] if groups is not None else []))
