"""Ground truth screened before any metric: ignore regions and objects that cannot be right.

Ignore regions (KITTI ``DontCare``, COCO ``iscrowd``; ``GroundTruthObject.ignore``) are not objects: they leave the
ground truth, and a detection that lies in one — its intersection with the region over its own area at least the
IoU threshold (the datasets' own evaluators' rule) — and matches no real object is dropped, so it counts neither as a
true nor as a false positive. Ground truth that cannot be right — in front of nothing (its ego-frame position behind
the camera, x <= 0), of zero area, or entirely outside the image (when the image size is known) — is excluded from
the metrics and counted; a detection matching such an object (IoU at least the threshold) is dropped with it.
This is one step before accumulation: every metric sees the screened frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace

import numpy as np

from perception_safety.core.iou import iou_matrix
from perception_safety.core.types import Frame, boxes_to_array


@dataclass(frozen=True)
class ScreenCounts:
    """What the screen removed: ignore regions, detections in them, impossible objects by reason, their
    detections."""

    ignore_regions: int = 0
    ignored_detections: int = 0
    behind_camera: int = 0
    zero_area: int = 0
    outside_image: int = 0
    detections_of_impossible: int = 0

    def __add__(self, other: ScreenCounts) -> ScreenCounts:
        return ScreenCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, int]) -> ScreenCounts:
        return cls(**{f.name: int(d.get(f.name, 0)) for f in fields(cls)})


def _image_size(frame: Frame) -> tuple[int, int] | None:
    if frame.image is not None:
        return int(frame.image.shape[1]), int(frame.image.shape[0])
    return frame.camera.size if frame.camera is not None else None


def _inside_fraction(dets: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """``(n, m)``: intersection of each detection with each region over the detection's area (0 for empty ones)."""
    w = np.minimum(dets[:, None, 2], regions[None, :, 2]) - np.maximum(dets[:, None, 0], regions[None, :, 0])
    h = np.minimum(dets[:, None, 3], regions[None, :, 3]) - np.maximum(dets[:, None, 1], regions[None, :, 1])
    inter = np.clip(w, 0.0, None) * np.clip(h, 0.0, None)
    area = ((dets[:, 2] - dets[:, 0]) * (dets[:, 3] - dets[:, 1]))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(area > 0, inter / area, 0.0)


def screen_frame(frame: Frame, iou_threshold: float) -> tuple[Frame, ScreenCounts]:
    """``frame`` without ignore regions, impossible objects and the detections that only they explain."""
    gts = frame.ground_truth
    if not gts:
        return frame, ScreenCounts()
    size = _image_size(frame)
    ignore = np.array([g.ignore for g in gts], dtype=bool)
    boxes = boxes_to_array([g.box for g in gts])
    zero = ~ignore & ((boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1]))
    behind = ~ignore & ~zero & np.array([g.position is not None and g.position[0] <= 0.0 for g in gts], dtype=bool)
    outside = np.zeros(len(gts), dtype=bool)
    if size is not None:
        w, h = size
        outside = ~ignore & ~zero & ~behind & ((boxes[:, 2] <= 0) | (boxes[:, 3] <= 0) | (boxes[:, 0] >= w)
                                                | (boxes[:, 1] >= h))
    impossible = zero | behind | outside
    if not (ignore.any() or impossible.any()):
        return frame, ScreenCounts()
    real = ~ignore & ~impossible
    dets = frame.detection_boxes()
    dropped_ignore = np.zeros(len(dets), dtype=bool)
    dropped_impossible = np.zeros(len(dets), dtype=bool)
    if len(dets):
        matches_real = (iou_matrix(dets, boxes[real]).max(axis=1) >= iou_threshold) if real.any() else \
            np.zeros(len(dets), dtype=bool)
        if ignore.any():
            dropped_ignore = ~matches_real & (_inside_fraction(dets, boxes[ignore]).max(axis=1) >= iou_threshold)
        if impossible.any():
            dropped_impossible = ~matches_real & ~dropped_ignore & (
                iou_matrix(dets, boxes[impossible]).max(axis=1) >= iou_threshold)
    keep = ~(dropped_ignore | dropped_impossible)
    screened = replace(frame, ground_truth=tuple(g for g, r in zip(gts, real, strict=True) if r),
                       detections=tuple(d for d, k in zip(frame.detections, keep, strict=True) if k))
    counts = ScreenCounts(int(ignore.sum()), int(dropped_ignore.sum()), int(behind.sum()), int(zero.sum()),
                          int(outside.sum()), int(dropped_impossible.sum()))
    return screened, counts


def screen_frames(frames: Iterable[Frame], iou_threshold: float) -> tuple[list[Frame], ScreenCounts]:
    """Every frame screened (`screen_frame`), and the summed counts. The frames with nothing to screen (no ignore
    region, no impossible object: most of them) are found with one numpy pass over all objects and kept as they
    are; only the others go through `screen_frame`."""
    out = list(frames)
    total = ScreenCounts()
    for i in np.flatnonzero(_to_screen(out)).tolist():
        out[i], c = screen_frame(out[i], iou_threshold)
        total = total + c
    return out, total


def _to_screen(frames: list[Frame]) -> np.ndarray:
    """Per frame: it holds an ignore region or an impossible object (what `screen_frame` screens)."""
    flat = [g for f in frames for g in f.ground_truth]
    if not flat:
        return np.zeros(len(frames), dtype=bool)
    frame = np.repeat(np.arange(len(frames)), [len(f.ground_truth) for f in frames])
    boxes = np.array([g.box.as_tuple() for g in flat], dtype=np.float64)
    sizes = np.array([_image_size(f) or (np.inf, np.inf) for f in frames], dtype=np.float64).reshape(-1, 2)[frame]
    bad = np.fromiter((g.ignore or (g.position is not None and g.position[0] <= 0.0) for g in flat), bool, len(flat))
    bad |= (boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1])  # zero area
    bad |= (boxes[:, 2] <= 0) | (boxes[:, 3] <= 0) | (boxes[:, 0] >= sizes[:, 0]) | (boxes[:, 1] >= sizes[:, 1])
    return np.bincount(frame[bad], minlength=len(frames)) > 0


class GroundTruthScreen:
    """The screen over a stream of frames, with the running counts (for commands that stream frames)."""

    def __init__(self, iou_threshold: float) -> None:
        self.iou_threshold = iou_threshold
        self.counts = ScreenCounts()

    def frames(self, frames: Iterable[Frame]) -> Iterator[Frame]:
        for f in frames:
            g, c = screen_frame(f, self.iou_threshold)
            self.counts = self.counts + c
            yield g


def unmapped_warnings(report: dict[str, object]) -> list[str]:
    """Labels a confusion class map sent nowhere, with counts (``ground_truth_unmapped`` / ``detections_unmapped``
    of a confusion report)."""
    out = []
    for key, what in (("ground_truth_unmapped", "ground-truth"), ("detections_unmapped", "detection")):
        counts = report.get(key) or {}
        if isinstance(counts, dict) and counts:
            listed = ", ".join(f"{k} ({n})" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:8])
            out.append(f"{sum(counts.values())} {what} label(s) map to no evaluation class and are left out: {listed} "
                       "(add them to the class map; presets such as @kitti_pedestrians name other datasets' labels)")
    return out


def screen_warnings(c: ScreenCounts) -> list[str]:
    """One warning per kind of removed ground truth (empty when nothing was removed)."""
    out = []
    if c.ignore_regions:
        out.append(f"{c.ignore_regions} ignore region(s) (KITTI DontCare / COCO iscrowd) are not objects: removed "
                   f"from the ground truth; {c.ignored_detections} detection(s) inside them count neither as true "
                   "nor as false positives (as the datasets' evaluators do)")
    bad = {"behind the camera": c.behind_camera, "of zero area": c.zero_area, "entirely outside the image":
           c.outside_image}
    if any(bad.values()):
        listed = ", ".join(f"{n} {what}" for what, n in bad.items() if n)
        out.append(f"ground truth that cannot be right, excluded from every metric: {listed}; "
                   f"{c.detections_of_impossible} detection(s) matching them excluded too")
    return out
