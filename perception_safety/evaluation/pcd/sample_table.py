"""PCD sample extraction of many frames at once: every frame's boxes and targets flattened, the per-frame rules of
`samples` (raw: a box serves the target it overlaps most; thresholded: the Hungarian match) applied to all
(box, target) pairs with numpy, one Python pass to flatten (issue 27: no numpy call per frame).

The result is the per-frame extraction's exactly: the same samples in the same order with the same values. A
thresholded frame whose admissible pairs are not already one-to-one (a box admissible for two targets or a target
for two boxes) goes through `match_frame` as before; elsewhere the admissible pairs are the matching.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from perception_safety.core import Frame, match_frame
from perception_safety.core.iou import iou_pairs
from perception_safety.errors import PerceptionSafetyError


class SampleError(PerceptionSafetyError):
    """A sample file is unreadable or malformed (the message names file and line)."""


@dataclass(frozen=True)
class SampleTable:
    """One row per kept ground-truth object in extraction order (frame by frame, each frame's objects in order)."""

    x: np.ndarray
    y: np.ndarray
    missed: np.ndarray
    group: np.ndarray
    frame: np.ndarray
    """Index (into the frames) of each sample's frame."""
    raw: np.ndarray
    """Whether each sample came from recorded candidates (input ``raw``) or the thresholded detections."""
    input: str
    """raw, thresholded or mixed (``samples.INPUT_MEANING``)."""
    band: np.ndarray | None = None
    """Size band of each sample's object (`size_bands`), when the table was extracted per size band."""


def size_bands(heights: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Index of each box height's band ``[edges[k], edges[k + 1])`` (the last one open); -1 below the first edge."""
    return np.searchsorted(np.asarray(edges, dtype=float), heights, side="right") - 1


def _heights(boxes: list[tuple[float, float, float, float]]) -> np.ndarray:
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return b[:, 3] - b[:, 1]


@dataclass
class SampleFrames:
    """The frames that hold ground truth, flattened (gt rows and box rows, each with its frame's row index): what
    every target's extraction reads (`flatten_frames` once, then `sample_table` per target and per size band)."""

    gt_boxes: list[tuple[float, float, float, float]]
    gt_class: list[str]
    gt_frame: list[int]
    box_boxes: list[tuple[float, float, float, float]]
    box_class: list[str]
    box_score: list[float]
    box_frame: list[int]
    frame_index: list[int]
    """Index into the caller's frames of each flattened frame."""
    frame_raw: list[bool]
    gt_start: list[int]
    gt_kept: list[tuple[float, str]]
    """(distance, track id) of every ground-truth object, in order (the filter is applied later)."""
    frames: list[Frame]
    input: str = "auto"
    source: str = ""


def flatten_frames(frames: Iterable[Frame], input: str = "auto", source: str = "") -> SampleFrames:
    """The frames flattened for `sample_table` (``input``, ``source``: as its arguments; `SampleError` for a frame
    without candidates when ``input`` is raw)."""
    flat = SampleFrames([], [], [], [], [], [], [], [], [], [], [], [], input, source)
    for i, frame in enumerate(frames):
        gts = frame.ground_truth
        if not gts:
            continue
        raw = input == "raw" or (input == "auto" and frame.candidates is not None)
        if raw and frame.candidates is None:
            raise SampleError(
                f"{source or 'frames'}: frame {frame.frame_id or frame.stamp_ns}: samples.input is raw but no "
                "sub-threshold candidates were recorded (use input: thresholded or auto)"
            )
        row = len(flat.frame_index)
        flat.frame_index.append(i)
        flat.frame_raw.append(raw)
        flat.frames.append(frame)
        flat.gt_start.append(len(flat.gt_class))
        for g in gts:
            flat.gt_boxes.append(g.box.as_tuple())
            flat.gt_class.append(g.class_id)
            flat.gt_frame.append(row)
            flat.gt_kept.append((g.distance, g.track_id))
        for b in (*frame.detections, *(frame.candidates or ())) if raw else frame.detections:
            flat.box_boxes.append(b.box.as_tuple())
            flat.box_class.append(b.class_id)
            flat.box_score.append(b.score)
            flat.box_frame.append(row)
    return flat


def _pairs(flat: SampleFrames, class_aware: bool, iou_threshold: float,
           bands: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """Every (box, ground truth) pair of a frame, box-major then in ground-truth order: box index, gt index, IoU
    and whether the pair is admissible (IoU > 0, at least ``iou_threshold``, same class when class-aware).
    ``bands`` (of the boxes, of the ground truth): only the pairs within one band (each band its own frame)."""
    box_frame = np.asarray(flat.box_frame, dtype=np.int64)
    gt_start = np.asarray([*flat.gt_start, len(flat.gt_class)], dtype=np.int64)
    n_gt = np.diff(gt_start)[box_frame]
    box = np.repeat(np.arange(len(box_frame), dtype=np.int64), n_gt)
    first = np.cumsum(n_gt) - n_gt  # each box's first pair
    gt = gt_start[box_frame][box] + (np.arange(len(box), dtype=np.int64) - np.repeat(first, n_gt))
    if bands is not None:
        same = bands[0][box] == bands[1][gt]
        box, gt = box[same], gt[same]
    ious = iou_pairs(np.asarray(flat.box_boxes, dtype=np.float64).reshape(-1, 4)[box],
                     np.asarray(flat.gt_boxes, dtype=np.float64).reshape(-1, 4)[gt])  # fmt: skip
    ok = (ious > 0.0) & (ious >= iou_threshold)
    if class_aware and len(box):
        codes: dict[str, int] = {}
        gc = np.asarray([codes.setdefault(c, len(codes)) for c in flat.gt_class], dtype=np.int64)
        bc = np.asarray([codes.setdefault(c, len(codes)) for c in flat.box_class], dtype=np.int64)
        ok &= bc[box] == gc[gt]
    return box, gt, ious, ok


def _raw_y(
    flat: SampleFrames, box: np.ndarray, gt: np.ndarray, ious: np.ndarray, ok: np.ndarray, y: np.ndarray,
    rows: np.ndarray,
) -> None:
    """Raw input on the frames ``rows``: each box serves its most-overlapped admissible target (first on ties);
    a target's ``y`` is the largest IoU x score of the boxes it is served by (0 when none)."""
    sel = rows[np.asarray(flat.box_frame, dtype=np.int64)[box]]
    box, gt, ious, ok = box[sel], gt[sel], ious[sel], ok[sel]
    if not len(box):
        return
    masked = np.where(ok, ious, -1.0)
    starts = np.flatnonzero(np.r_[True, box[1:] != box[:-1]])
    best = np.maximum.reduceat(masked, starts)
    at_best = np.flatnonzero(masked == np.repeat(best, np.diff(np.r_[starts, len(box)])))
    _, first = np.unique(box[at_best], return_index=True)
    pick = at_best[first]  # each box's pair of its most-overlapped target, the first such target on ties
    v = ious[pick] * np.asarray(flat.box_score, dtype=np.float64)[box[pick]]
    keep = (best > 0) & (v > 0)  # scores lie in [0, 1]: the per-frame max(0, ...) keeps only positive values
    np.maximum.at(y, gt[pick][keep], v[keep])


def _thresholded_y(
    flat: SampleFrames,
    box: np.ndarray,
    gt: np.ndarray,
    ious: np.ndarray,
    ok: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    iou_threshold: float,
    class_aware: bool,
    edges: Sequence[float] | None = None,
) -> None:
    """Thresholded input on the frames ``rows``: ``y`` = IoU x score of the target's matched detection (matched
    within the object's size band when ``edges`` are given)."""
    if not rows.any():
        return
    if not 0.0 <= iou_threshold <= 1.0:  # what match_boxes raises
        raise ValueError(f"iou_threshold must lie in [0, 1], got {iou_threshold}")
    box_frame = np.asarray(flat.box_frame, dtype=np.int64)
    adm = ok & rows[box_frame[box]]
    per_box = np.bincount(box[adm], minlength=len(box_frame))
    per_gt = np.bincount(gt[adm], minlength=len(flat.gt_class))
    tangled = np.zeros(len(rows), dtype=bool)
    tangled[box_frame[per_box > 1]] = True
    tangled[np.asarray(flat.gt_frame, dtype=np.int64)[per_gt > 1]] = True
    simple = adm & ~tangled[box_frame[box]]  # one-to-one admissible pairs: every assignment's optimum holds them all
    y[gt[simple]] = ious[simple] * np.asarray(flat.box_score, dtype=np.float64)[box[simple]]
    for r in np.flatnonzero(tangled):
        start = flat.gt_start[r]
        for gt_index, frame in _band_frames(flat.frames[r], edges):
            matching = match_frame(frame, iou_threshold=iou_threshold, class_aware=class_aware)
            for g, d, iou in zip(matching.gt_indices, matching.det_indices, matching.ious, strict=True):
                y[start + gt_index[g]] = iou * frame.detections[d].score


def _band_frames(frame: Frame, edges: Sequence[float] | None) -> Iterable[tuple[Sequence[int], Frame]]:
    """The frame (``edges`` None), else per size band of its ground truth the frame with only that band's ground
    truth and detections; each with the index in ``frame`` of its ground-truth objects."""
    if edges is None:
        yield range(len(frame.ground_truth)), frame
        return
    gt_band = size_bands(_heights([g.box.as_tuple() for g in frame.ground_truth]), edges).tolist()
    det_band = size_bands(_heights([d.box.as_tuple() for d in frame.detections]), edges).tolist()
    for band in dict.fromkeys(gt_band):
        index = [i for i, b in enumerate(gt_band) if b == band]
        dets = tuple(d for d, b in zip(frame.detections, det_band, strict=True) if b == band)
        yield index, replace(frame, ground_truth=tuple(frame.ground_truth[i] for i in index), detections=dets)


def input_kind(raw: np.ndarray, requested: str) -> str:
    """Which input samples with these raw flags came from: raw, thresholded or mixed; with none, what was asked."""
    used = set(np.asarray(raw, dtype=bool).tolist())
    if len(used) == 2:
        return "mixed"
    if used:
        return "raw" if used.pop() else "thresholded"
    return "raw" if requested == "raw" else "thresholded"


def sample_table(
    frames: Iterable[Frame] | SampleFrames,
    class_id: str | None = None,
    track_id: str | None = None,
    iou_threshold: float = 0.0,
    class_aware: bool = False,
    source: str = "",
    input: str = "auto",
    unit: str = "track",
    size_edges: Sequence[float] | None = None,
) -> SampleTable:
    """The samples of `samples.samples_from_frames` before its sort by distance, with each one's frame and input.

    ``frames`` may be already flattened (`flatten_frames`). ``size_edges``: the samples of every object-size band at
    once (`size_bands` of the box heights): each band's samples are those of the frames with only that band's ground
    truth, detections and candidates, and `SampleTable.band` says each sample's band.
    """
    if input not in ("auto", "raw", "thresholded"):
        raise ValueError(f"input must be auto, raw or thresholded, got {input!r}")
    if isinstance(frames, SampleFrames):  # flattened once for several targets
        if (frames.input, frames.source) != (input, source):
            raise ValueError(f"frames flattened for input {frames.input!r} of {frames.source!r}, asked for {input!r} "
                             f"of {source!r}")
        flat = frames
    else:
        flat = flatten_frames(frames, input, source)
    bands = None
    if size_edges is not None:
        bands = (size_bands(_heights(flat.box_boxes), size_edges), size_bands(_heights(flat.gt_boxes), size_edges))
    box, gt, ious, ok = _pairs(flat, class_aware, iou_threshold, bands)
    y = np.zeros(len(flat.gt_class))
    raw_rows = np.asarray(flat.frame_raw, dtype=bool)
    _raw_y(flat, box, gt, ious, ok, y, raw_rows)
    _thresholded_y(flat, box, gt, ious, ok, y, ~raw_rows, iou_threshold, class_aware, size_edges)
    kept = [i for i, (g, c) in enumerate(zip(flat.gt_kept, flat.gt_class, strict=True))
            if (class_id is None or c == class_id) and (track_id is None or g[1] == track_id)]  # fmt: skip
    idx = np.asarray(kept, dtype=np.int64)
    rows = np.asarray(flat.gt_frame, dtype=np.int64)[idx]
    raw = raw_rows[rows]
    groups = [f"{source}|{flat.gt_kept[i][1]}" if unit == "track" and flat.gt_kept[i][1] else source for i in kept]
    yk = y[idx]
    return SampleTable(
        x=np.asarray([float(flat.gt_kept[i][0]) for i in kept], dtype=float),
        y=yk,
        missed=yk == 0.0,
        group=np.asarray(groups, dtype=object),
        frame=np.asarray(flat.frame_index, dtype=np.int64)[rows],
        raw=raw,
        input=input_kind(raw, input),
        band=None if bands is None else bands[1][idx],
    )
