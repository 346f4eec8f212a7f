"""Evidence behind the numbers: a bounded set of frame references per confusion cell, failure and alarm.

Every count of the report (a confusion cell, a BBSL failure, a false stop, a monitor alarm) keeps the frames it
came from, at most ``per_cell`` of them: the most informative first (`FrameRef.priority`, smaller first; ties by
stamp). The per-bag pass feeds an `EvidenceCollector`; collectors of bags merge (the reduce). The matching is the
confusion matrices' own (`MatchedRows` of the same `FrameBatch`: IoU or centre distance as configured), so a reference
sits in the cell it was counted in.

Cell keys (stable, used by ``perception-safety frames``):
``cm:<pred>:<true>@<lo>-<hi>`` class-labeled cell (``pred = empty``: the object was missed);
``false:<class>`` detection of the class matched to no ground truth; ``false_stop`` / ``missed_stop`` the
stop-region rule on the detections disagrees with the rule on the ground truth; ``bbsl:<spec>:<expected>-><actual>``
a failed BBSL test case; ``alarm:<status>`` a frame on which the recorded monitor status raised an alarm.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.rows import matched_rows
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.stop_region import StopRegionMonitor

DEFAULT_PER_CELL = 20


@dataclass(frozen=True)
class FrameRef:
    """One frame behind a count: its stamp, what happened there, the object (class, distance, box) it is about."""

    stamp_ns: int
    kind: str
    """missed, matched, confused, false_detection, false_stop, missed_stop, bbsl_failure, alarm, collision."""
    label: str = ""
    distance_m: float | None = None
    box: tuple[float, float, float, float] | None = None
    detail: str = ""
    priority: float = 0.0
    """Smaller = more informative (e.g. the distance of a missed object: the nearest first)."""

    def to_json(self) -> dict[str, Any]:
        return {"stamp_ns": self.stamp_ns, "kind": self.kind, "label": self.label, "distance_m": self.distance_m,
                "box": list(self.box) if self.box is not None else None, "detail": self.detail,
                "priority": self.priority}  # fmt: skip

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FrameRef:
        box = d.get("box")
        return cls(**{**d, "box": tuple(box) if box is not None else None})  # type: ignore[arg-type]


@dataclass
class EvidenceCollector:
    """At most ``per_cell`` references per cell key (the smallest ``(priority, stamp)``) and every cell's count."""

    per_cell: int = DEFAULT_PER_CELL
    counts: dict[str, int] = field(default_factory=dict)
    _heaps: dict[str, list[tuple[float, int, int, FrameRef]]] = field(default_factory=dict)
    _seq: int = 0

    def add(self, cell: str, ref: FrameRef) -> None:
        """Count one occurrence in ``cell`` and keep its reference if it is among the most informative."""
        self.counts[cell] = self.counts.get(cell, 0) + 1
        self._keep(cell, ref)

    def _keep(self, cell: str, ref: FrameRef) -> None:
        if self.per_cell <= 0:
            return
        heap = self._heaps.setdefault(cell, [])
        self._seq += 1
        item = (-ref.priority, -ref.stamp_ns, -self._seq, ref)  # max-heap on (priority, stamp): drop the worst
        if len(heap) < self.per_cell:
            heapq.heappush(heap, item)
        elif item[:3] > heap[0][:3]:
            heapq.heapreplace(heap, item)

    def add_ranked(self, cells: Sequence[str], which: np.ndarray, priority: np.ndarray, stamp: np.ndarray,
                   ref: Callable[[int], FrameRef]) -> None:
        """``add`` of many occurrences at once, in order: occurrence ``i`` in ``cells[which[i]]`` with its
        ``priority`` and ``stamp``; only the references that can be kept (the ``per_cell`` best of each cell
        among these) are built, by ``ref(i)``, so the result is the same as adding them one by one."""
        which = np.asarray(which, dtype=np.int64)
        for c, n in zip(*np.unique(which, return_counts=True), strict=True):
            self.counts[cells[c]] = self.counts.get(cells[c], 0) + int(n)
        if self.per_cell <= 0 or which.size == 0:
            return
        order = np.lexsort((np.arange(which.size), np.asarray(stamp), np.asarray(priority, dtype=np.float64), which))
        ranked = which[order]
        starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
        rank = np.arange(which.size) - np.repeat(starts, np.diff(np.r_[starts, which.size]))
        which_l = which.tolist()
        for i in np.sort(order[rank < self.per_cell]).tolist():
            self._keep(cells[which_l[i]], ref(i))

    def refs(self, cell: str) -> list[FrameRef]:
        """The kept references of ``cell``, most informative first."""
        return [it[3] for it in sorted(self._heaps.get(cell, []), key=lambda it: (-it[0], -it[1], -it[2]))]

    def to_json(self) -> dict[str, Any]:
        return {
            "per_cell": self.per_cell,
            "cells": {
                k: {"count": n, "refs": [r.to_json() for r in self.refs(k)]} for k, n in sorted(self.counts.items())
            },
        }


def cell_key(pred: str, true: str, lo: float, hi: float) -> str:
    """Key of a class-labeled confusion cell (``cm:empty:ped@0-10``)."""
    return f"cm:{pred}:{true}@{lo:g}-{hi:g}"


def _kind(pred: str, true: str, empty: str) -> str:
    return "missed" if pred == empty else ("matched" if pred == true else "confused")


def collect_confusion(col: EvidenceCollector, frames: Sequence[Frame], cfg: ConfusionConfig,
                      batch: FrameBatch | None = None) -> None:
    """References of every class-labeled cell (objects in a distance bin) and of every unmatched detection.

    Priority: errors (missed, confused) nearest first (they matter most to a planner); correct cells farthest first
    (the hardest objects still found); unmatched detections by score, most confident first. ``batch``: the frames
    already flattened by the caller (the evaluation's own batch), else built here.
    """
    if not frames:
        return
    mapper = ClassMapper(cfg)
    batch = batch if batch is not None else FrameBatch.from_frames(frames, mapper)
    rows = matched_rows(batch, cfg)  # the counts' own match (IoU or centre distance), made once per batch object
    gt_pred, det_used = rows.gt_pred, rows.det_matched
    names = (*cfg.class_names, cfg.empty_label)
    edges = np.asarray(cfg.bin_edges, dtype=np.float64)
    b, gt_frame, det_frame = rows.gt_bin, rows.gt_frame, rows.det_frame  # the match's own bins and frame indices
    stamps = batch.frame_stamps if batch.frame_stamps is not None else np.array([f.stamp_ns for f in frames])
    gts = np.flatnonzero((b >= 0) & (b < len(edges) - 1))
    pred = gt_pred[gts]
    true = batch.gt_classes[gts]
    combo = (pred * len(names) + true) * len(edges) + b[gts]
    keys, which = np.unique(combo, return_inverse=True)
    cells = [cell_key(names[k // len(edges) // len(names)], names[k // len(edges) % len(names)],
                      edges[k % len(edges)], edges[k % len(edges) + 1]) for k in keys.tolist()]  # fmt: skip
    dist = batch.gt_distances[gts]
    matched = pred == true
    # what a reference reads, as Python lists (one conversion per episode, not numpy scalars per reference)
    gts_l, pred_l, true_l, dist_l = gts.tolist(), pred.tolist(), true.tolist(), dist.tolist()
    boxes_l, frame_l, stamps_l = batch.gt_boxes.tolist(), gt_frame.tolist(), np.asarray(stamps).tolist()
    tracks_l = batch.gt_tracks.tolist() if batch.gt_tracks is not None else None

    def gt_ref(i: int) -> FrameRef:
        g = gts_l[i]
        p, t = names[pred_l[i]], names[true_l[i]]
        kind = _kind(p, t, cfg.empty_label)
        d = dist_l[i]
        track = str(tracks_l[g]) if tracks_l is not None else ""
        return FrameRef(stamps_l[frame_l[g]], kind, t, d, tuple(boxes_l[g]), f"track {track}" if track else "",
                        d if kind != "matched" else -d)

    col.add_ranked(cells, which.reshape(-1), np.where(matched, -dist, dist), stamps[gt_frame[gts]], gt_ref)
    scores = batch.det_scores if batch.det_scores is not None else np.array(
        [d.score for f in frames for d in f.detections if mapper(d.class_id) >= 0], dtype=np.float64)
    false = np.flatnonzero(~det_used)
    false_score = np.concatenate([scores, np.zeros(len(batch.det_boxes))])[false]  # 0 where a score is missing

    def det_ref(i: int) -> FrameRef:
        d = int(false[i])
        cls, score = names[int(batch.det_classes[d])], float(false_score[i])
        return FrameRef(int(stamps[det_frame[d]]), "false_detection", cls, None, tuple(batch.det_boxes[d].tolist()),
                        f"score {score:.2f}", -score)

    false_cells = [f"false:{name}" for name in names]
    col.add_ranked(false_cells, batch.det_classes[false], -false_score, stamps[det_frame[false]], det_ref)


def collect_stops(col: EvidenceCollector, frames: Iterable[Frame], cfg: MonitorsConfig,
                  image_size: tuple[float, float] | None = None) -> None:
    """Frames where the stop rule (`StopRegionMonitor`, region or corridor) on the detections disagrees with the
    same rule on the ground truth.

    A false stop (detections stop, ground truth does not) is ranked by the detection's score; a missed stop by the
    nearest ground-truth object. ``image_size`` places the region on frames read without image or CameraInfo
    when the camera mount names no size (evaluate's ``bbsl.image_size``, the size its BBSL stop rule uses).
    """
    if not cfg.stop_region.enabled:
        return
    camera = cfg.camera
    if camera.image_size is None and image_size is not None:
        camera = camera.model_copy(update={"image_size": (round(image_size[0]), round(image_size[1]))})
    on_dets = StopRegionMonitor(cfg.stop_region.model_copy(update={"source": "detections"}), camera)
    on_truth = StopRegionMonitor(cfg.stop_region.model_copy(update={"source": "ground_truth"}), camera)
    frames = list(frames)
    dets, truth = on_dets.judge(frames), on_truth.judge(frames)  # every frame at once (one numpy pass per source)
    n = min(dets.frames, truth.frames)
    has_dets, has_truth = np.diff(dets.boxes.offsets)[:n] > 0, np.diff(truth.boxes.offsets)[:n] > 0
    stop_d, stop_g = dets.alarm[:n], truth.alarm[:n]
    stamps = np.fromiter((f.stamp_ns for f in frames[:n]), np.int64, n)
    false = np.flatnonzero(stop_d & ~stop_g & has_dets)
    top = [max(frames[k].detections, key=lambda x: x.score) for k in false.tolist()]  # highest score, first on ties

    def false_ref(i: int) -> FrameRef:
        d = top[i]
        return FrameRef(int(stamps[false[i]]), "false_stop", d.class_id, None, d.box.as_tuple(),
                        f"stop on '{d.class_id}' (score {d.score:.2f}); the ground truth gives no stop", -d.score)

    col.add_ranked(["false_stop"], np.zeros(len(top), np.int64), np.array([-d.score for d in top]), stamps[false],
                   false_ref)
    missed = np.flatnonzero(stop_g & ~stop_d & has_truth)
    near = [min(frames[k].ground_truth, key=lambda x: x.distance) for k in missed.tolist()]  # nearest, first on ties

    def missed_ref(i: int) -> FrameRef:
        g = near[i]
        return FrameRef(int(stamps[missed[i]]), "missed_stop", g.class_id, g.distance, g.box.as_tuple(),
                        "the ground truth stops, the detections do not", g.distance)

    col.add_ranked(["missed_stop"], np.zeros(len(near), np.int64), np.array([g.distance for g in near]),
                   stamps[missed], missed_ref)
    error = dets.error if dets.frames <= truth.frames else truth.error  # the first frame's (detections first)
    if error is not None:  # the frames before it are judged, as frame by frame
        raise error


def collect_bbsl(col: EvidenceCollector, spec: str, cases: Iterable[Any], frames: Sequence[Frame]) -> None:
    """Failed BBSL test cases (`bbsl_testing.TestCase` with ``verdict`` False), nearest object first."""
    by_id = {f.frame_id: f for f in frames}
    for tc in cases:
        if tc.verdict:
            continue
        f = by_id.get(tc.frame_id)
        stamp = f.stamp_ns if f is not None else int(str(tc.frame_id).rsplit(":", 1)[-1])
        gt = f.ground_truth[tc.gt_index] if f is not None and tc.gt_index < len(f.ground_truth) else None
        expected = " + ".join(tc.expected) or "(no case)"
        actual = " + ".join(tc.actual) if tc.actual else "(no detection)"
        dist = gt.distance if gt is not None else None
        ref = FrameRef(stamp, "bbsl_failure", gt.class_id if gt is not None else "", dist, tuple(tc.gt_box),
                       f"expected {expected}, detection gives {actual} (IoU {tc.iou:.2f})",
                       dist if dist is not None else 0.0)
        col.add(f"bbsl:{spec}:{expected}->{actual}", ref)


def collect_alarms(col: EvidenceCollector, name: str, frames: Sequence[Frame],
                   alarms: Sequence[bool | None]) -> None:
    """Frames on which the recorded monitor status ``name`` raised an alarm (one verdict per frame, None unknown);
    the first alarms first, each about the nearest ground-truth object (if any)."""
    if len(alarms) != len(frames):
        raise ValueError(f"{len(alarms)} verdicts for {len(frames)} frames")
    hit = [i for i, alarm in enumerate(alarms) if alarm]
    stamps = np.array([frames[i].stamp_ns for i in hit], dtype=np.int64)

    def ref(k: int) -> FrameRef:
        f = frames[hit[k]]
        near = min(f.ground_truth, key=lambda g: g.distance) if f.ground_truth else None
        return FrameRef(f.stamp_ns, "alarm", near.class_id if near else "", near.distance if near else None,
                        near.box.as_tuple() if near else None, "no object in the frame" if near is None else "",
                        float(f.stamp_ns) / 1e9)

    priority = np.array([float(s) / 1e9 for s in stamps.tolist()], dtype=np.float64)
    col.add_ranked([f"alarm:{name}"], np.zeros(len(hit), dtype=np.int64), priority, stamps, ref)


def merge_cells(parts: Sequence[Mapping[str, Any]], per_cell: int) -> dict[str, dict[str, Any]]:
    """The reduce: cells of several partials (each ``{"cells": {key: {"count", "refs"}}}``), ``refs`` already
    carrying their bag; the ``per_cell`` most informative of each cell are kept, counts are summed."""
    out: dict[str, dict[str, Any]] = {}
    for p in parts:
        for key, cell in p.get("cells", {}).items():
            slot = out.setdefault(key, {"count": 0, "refs": []})
            slot["count"] += int(cell["count"])
            slot["refs"].extend(cell["refs"])
    for slot in out.values():
        slot["refs"] = sorted(slot["refs"], key=lambda r: (r["priority"], r["stamp_ns"], r.get("bag", "")))[:per_cell]
    return dict(sorted(out.items()))
