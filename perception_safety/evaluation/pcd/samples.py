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

from perception_safety.core import Frame, match_frame
from perception_safety.core.iou import iou_matrix
from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io import atomic_open


class SampleError(PerceptionSafetyError):
    """A sample file is unreadable or malformed (the message names file and line)."""


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


def _raw_scores(frame: Frame, iou_threshold: float, class_aware: bool) -> np.ndarray:
    """Per ground-truth object: IoU x score of its highest-scoring box among detections and candidates, or 0.

    A box counts for the object it overlaps most (admissible pairs only), so one box never serves two targets.
    """
    boxes = list(frame.detections) + list(frame.candidates or ())
    n_gt = len(frame.ground_truth)
    if not boxes:
        return np.zeros(n_gt)
    ious = iou_matrix(
        np.array([b.box.as_tuple() for b in boxes], dtype=float), frame.ground_truth_boxes()
    )  # (boxes, gt)
    ok = (ious > 0.0) & (ious >= iou_threshold)
    if class_aware:
        ok &= np.array([b.class_id for b in boxes], dtype=object)[:, None] == np.array(
            [g.class_id for g in frame.ground_truth], dtype=object
        )[None, :]
    masked = np.where(ok, ious, -1.0)
    best = np.argmax(masked, axis=1)
    has = masked[np.arange(len(boxes)), best] > 0
    scores = np.array([b.score for b in boxes], dtype=float)
    out = np.zeros(n_gt)
    for i in np.flatnonzero(has):
        g = best[i]
        out[g] = max(out[g], ious[i, g] * scores[i])
    return out


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
    """
    if input not in ("auto", "raw", "thresholded"):
        raise ValueError(f"input must be auto, raw or thresholded, got {input!r}")
    xs: list[float] = []
    ys: list[float] = []
    missed: list[bool] = []
    groups: list[str] = []
    used: set[str] = set()
    for frame in frames:
        if not frame.ground_truth:
            continue
        raw = input == "raw" or (input == "auto" and frame.candidates is not None)
        if raw and frame.candidates is None:
            raise SampleError(
                f"{source or 'frames'}: frame {frame.frame_id or frame.stamp_ns}: samples.input is raw but no "
                "sub-threshold candidates were recorded (use input: thresholded or auto)"
            )
        if raw:
            y_gt = _raw_scores(frame, iou_threshold, class_aware)
        else:
            matching = match_frame(frame, iou_threshold=iou_threshold, class_aware=class_aware)
            det_for_gt = matching.detection_for_gt()
            iou_for_gt = np.zeros(len(frame.ground_truth))
            iou_for_gt[matching.gt_indices] = matching.ious
            y_gt = np.array(
                [iou_for_gt[g] * frame.detections[d].score if d >= 0 else 0.0 for g, d in enumerate(det_for_gt)]
            )
        for g, gt in enumerate(frame.ground_truth):
            if class_id is not None and gt.class_id != class_id:
                continue
            if track_id is not None and gt.track_id != track_id:
                continue
            used.add("raw" if raw else "thresholded")
            xs.append(float(gt.distance))
            ys.append(float(y_gt[g]))
            missed.append(bool(y_gt[g] == 0.0))
            groups.append(f"{source}|{gt.track_id}" if unit == "track" and gt.track_id else source)
    kind = "mixed" if len(used) == 2 else (used.pop() if used else ("raw" if input == "raw" else "thresholded"))
    return _sorted(xs, ys, missed, source, groups, kind)


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
