"""Breakdowns by condition (``evaluate.breakdowns``): the confusion and PCD analyses split by a frame attribute.

Attributes of a whole bag (perturbation, level, episode, scenario, weather, ... from the bag's metadata
``custom_data`` or its ``conditions.yaml``, io.bag_inputs) need no extra work: the bag's partial is reused
for its group. ``ego_speed_band`` is per frame (the ego speed, binned by ``evaluate.speed_bands_mps``), so
the map step accumulates one extra partial per band. ``object_size_band`` is per object (box height in pixels,
binned by ``evaluate.size_bands_px``): each band's partial holds every frame with only the ground-truth objects,
detections and candidates whose box height falls in the band (COCO-style area ranges, by height), so recall per
band counts the objects of that size. A frame without the attribute goes to ``unknown``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, sum_confusions
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.clusters import ClusterCounts
from perception_safety.evaluation.confusion.io import confusion_from_mapping
from perception_safety.evaluation.confusion.rows import MatchedRows, matched_rows
from perception_safety.evaluation.confusion.selections import count_selections
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.pcd.sample_table import (
    SampleFrames,
    flatten_frames,
    input_kind,
    sample_table,
    size_bands,
)
from perception_safety.evaluation.pcd.samples import PCDSamples, samples_from_frames
from perception_safety.pipeline.evaluate_config import EvaluateConfig, PCDTarget

SPEED_BAND = "ego_speed_band"
SIZE_BAND = "object_size_band"
PER_FRAME = {SPEED_BAND: "speed_bands", SIZE_BAND: "size_bands"}
"""Attributes split inside a bag, and the partial key holding their per-band parts."""
UNKNOWN = "unknown"


def _is_target(g: Any, t: PCDTarget) -> bool:
    """The sample filter of `samples_from_frames` (class and track)."""
    return (t.class_id is None or g.class_id == t.class_id) and (t.track_id is None or g.track_id == t.track_id)


def _samples(frames: Sequence[Frame], t: PCDTarget, cfg: EvaluateConfig, source: str) -> PCDSamples:
    """`samples_from_frames` of the frames that hold a target object (the others give no sample; with input
    ``raw`` every frame is passed, so a frame without candidates is still the error it is there)."""
    if cfg.pcd.samples.input != "raw":
        frames = [f for f in frames if any(_is_target(g, t) for g in f.ground_truth)]
    return samples_from_frames(frames, t.class_id, t.track_id, t.iou_threshold, t.class_aware, source,
                               cfg.pcd.samples.input, cfg.pcd.bootstrap.unit)  # fmt: skip


def _samples_json(s: PCDSamples) -> dict[str, Any]:
    return {
        "x": s.x.tolist(),
        "y": s.y.tolist(),
        "missed": s.missed.tolist(),
        "group": [str(g) for g in s.group] if s.group is not None else None,
        "input": s.input,
    }


def pcd_parts(frames: Sequence[Frame], cfg: EvaluateConfig, source: str) -> dict[str, Any]:
    """PCD samples per target of a set of frames, as JSON."""
    return {t.name: _samples_json(_samples(frames, t, cfg, source)) for t in cfg.evaluate.pcd_targets}


@dataclass(frozen=True)
class FrameSamples:
    """One target's samples of an episode's frames and the frame each came from: the samples of any subset of
    the frames are a selection of them (`for_frames`), so a band costs no second extraction."""

    samples: PCDSamples
    frame: np.ndarray
    """Index (into the frames) of each sample's frame."""
    raw: np.ndarray
    """Whether each sample came from recorded candidates (input ``raw``) or the thresholded detections."""
    requested: str
    band: np.ndarray | None = None
    """Size band of each sample's object when extracted per size band (``size_edges``), else None."""

    @classmethod
    def of(cls, frames: Sequence[Frame] | SampleFrames, t: PCDTarget, cfg: EvaluateConfig, source: str,
           size_edges: Sequence[float] | None = None) -> FrameSamples:
        """``size_edges``: the samples of every object-size band (each from its band's boxes alone), banded.
        ``frames`` may be already flattened (`sample_frames`)."""
        mode = cfg.pcd.samples.input
        tab = sample_table(frames, t.class_id, t.track_id, t.iou_threshold, t.class_aware, source, mode,
                           cfg.pcd.bootstrap.unit, size_edges)  # fmt: skip
        order = np.argsort(tab.x, kind="stable")  # `samples_from_frames`' sort
        s = PCDSamples(tab.x[order], tab.y[order], tab.missed[order], source, tab.group[order], tab.input)
        return cls(s, tab.frame[order], tab.raw[order], mode, None if tab.band is None else tab.band[order])

    def for_frames(self, frame_mask: np.ndarray) -> dict[str, Any]:
        """The JSON part `pcd_parts` gives for the frames selected by ``frame_mask``."""
        return self.selected(np.asarray(frame_mask, dtype=bool)[self.frame])

    def selected(self, keep: np.ndarray) -> dict[str, Any]:
        """The JSON part of the samples selected by ``keep`` (one flag per sample)."""
        s = self.samples
        kind = input_kind(self.raw[keep], self.requested)
        group = None if s.group is None else s.group[keep]
        return _samples_json(PCDSamples(s.x[keep], s.y[keep], s.missed[keep], s.source, group, kind))


def counts_json(dc: DistanceConfusion) -> dict[str, Any]:
    """The counts of a `DistanceConfusion` for a partial (what the reduce sums; `confusion_from_mapping` reads it).

    A partial carries counts only: normalised matrices and intervals are computed once, on the sums. The count
    arrays stay numpy arrays (the reduce reads array-likes; `pipeline.partials` writes them flat), so neither the map
    nor the reduce builds nested Python lists of them; ``clusters`` holds `ClusterCounts.to_json`'s keys.
    """
    cms = (dc.class_cm, dc.prop_cm, dc.class_cm_pooled, dc.prop_cm_pooled)
    return _counts(dc, cms, dc.pooled_method, dc.source, dc.report, dc.clusters)


def _counts(labels: DistanceConfusion, cms: Sequence[np.ndarray], pooled_method: str, source: str,
            report: dict[str, Any], clusters: ClusterCounts | None) -> dict[str, Any]:  # fmt: skip
    """`counts_json` of these matrices (class, prop, pooled class, pooled prop), with the edges and labels of
    ``labels`` (a `DistanceConfusion` of the same config)."""
    out = {
        "bin_edges": [[lo, hi] for lo, hi in labels.bin_edges],
        "class_labels": list(labels.class_labels),
        "prop_labels": list(labels.prop_labels),
        "class_cm": cms[0],
        "prop_cm": cms[1],
        "class_cm_pooled": cms[2],
        "prop_cm_pooled": cms[3],
        "pooled_method": pooled_method,
        "source": source,
        "report": report,
    }
    if clusters is not None:  # per-episode counts for the cluster-aware intervals (issue 24)
        c = clusters
        out["clusters"] = {"unit": c.unit, "ids": list(c.ids), "frames": c.frames, "class_cm": c.class_cm,
                           "class_cm_pooled": c.class_cm_pooled, "unmatched": c.unmatched}  # fmt: skip
    return out


class PendingCounts:
    """Confusion parts asked for during one episode's map, counted together when `flush` runs (the selections of
    one batch side by side: `selections.count_selections`); each part is an empty dict until then."""

    def __init__(self, cfg: EvaluateConfig, source: str) -> None:
        self.cfg, self.source = cfg, source
        self._asked: list[tuple[MatchedRows, dict[str, Any]]] = []

    def part(self, rows: MatchedRows) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self._asked.append((rows, out))
        return out

    def flush(self) -> None:
        """Fill every part asked for (`confusion_part`'s counts of its rows)."""
        asked, self._asked = self._asked, []
        if not asked:
            return
        accs = count_selections([rows for rows, _ in asked], self.cfg.confusion)
        first = accs[0].result(source=self.source)
        asked[0][1].update(counts_json(first))
        for (_, out), acc in zip(asked[1:], accs[1:], strict=True):
            if self.cfg.confusion.sample_unit != "frame":  # windows' votes: the matrices `result` gives
                out.update(counts_json(acc.result(source=self.source)))
                continue
            cms = (acc.class_cm, acc.prop_cm, acc.class_cm_pooled, acc.prop_cm_pooled)  # what `result` freezes
            out.update(_counts(first, cms, first.pooled_method, self.source, acc.report(), acc.cluster_result()))


def confusion_part(
    batch: FrameBatch, cfg: EvaluateConfig, source: str, frames: np.ndarray | None = None,
    rows: MatchedRows | None = None, pending: PendingCounts | None = None,
) -> dict[str, Any]:
    """The confusion counts of one columnar batch (or of the frames the mask ``frames`` selects), as JSON: the batch
    is matched once for all its selections (`matched_rows`), a selection counts its rows; ``rows``: counted as is;
    ``pending``: counted with the episode's other selections when it flushes (the dict is filled then)."""
    if rows is None:
        rows = matched_rows(batch, cfg.confusion)
        rows = rows if frames is None else rows.select_frames(frames)
    if pending is not None:
        return pending.part(rows)
    return counts_json(ConfusionAccumulator(cfg.confusion).add_rows(rows).result(source=source))


def band_parts(
    frames: Sequence[Frame], batch: FrameBatch | None, cfg: EvaluateConfig, source: str, frame_mask: np.ndarray,
    samples: Sequence[FrameSamples] = (), pending: PendingCounts | None = None,
) -> dict[str, Any]:
    """The per-frame analyses of the frames selected by ``frame_mask``: confusion (from the batch) and PCD (a
    selection of ``samples``, the episode's samples per target, when given)."""
    analyses = set(cfg.evaluate.analyses)
    out: dict[str, Any] = {"frames": int(frame_mask.sum())}
    if batch is not None:
        out["confusion"] = confusion_part(batch, cfg, source, frame_mask, pending=pending)
    if "pcd" in analyses:
        if samples:
            out["pcd"] = {t.name: s.for_frames(frame_mask) for t, s in zip(cfg.evaluate.pcd_targets, samples,
                                                                          strict=True)}  # fmt: skip
        else:
            out["pcd"] = pcd_parts([f for f, keep in zip(frames, frame_mask, strict=True) if keep], cfg, source)
    return out


def speed_band(speed: float | None, edges: Sequence[float], unit: str = "m/s") -> str:
    """``"[lo, hi) m/s"`` of the ego speed (or any value in ``unit``), ``"unknown"`` when absent or below the edges."""
    if speed is None:
        return UNKNOWN
    for lo, hi in pairwise(edges):
        if lo <= speed < hi:
            return f"[{lo:g}, {hi:g}) {unit}"
    return f">= {edges[-1]:g} {unit}" if speed >= edges[-1] else UNKNOWN


def sample_frames(frames: Sequence[Frame], cfg: EvaluateConfig, source: str) -> SampleFrames:
    """An episode's frames flattened once for every PCD extraction (each target, pooled and per size band)."""
    return flatten_frames(frames, cfg.pcd.samples.input, source)


def episode_samples(frames: Sequence[Frame] | SampleFrames, cfg: EvaluateConfig, source: str) -> list[FrameSamples]:
    """Each PCD target's samples of an episode's frames, extracted once (pooled and every speed band select)."""
    return [FrameSamples.of(frames, t, cfg, source) for t in cfg.evaluate.pcd_targets]


def speed_band_parts(
    frames: Sequence[Frame], batch: FrameBatch | None, cfg: EvaluateConfig, source: str,
    samples: Sequence[FrameSamples] = (), pending: PendingCounts | None = None,
) -> dict[str, Any]:
    """The per-frame analyses per ego-speed band (bands in order of first appearance), each frame counted once
    (``samples``: the episode's `episode_samples`, else extracted per band)."""
    edges = cfg.evaluate.speed_bands_mps
    speeds = np.fromiter((f.ego.speed if f.ego is not None else np.nan for f in frames), np.float64, len(frames))
    index = np.where(np.isnan(speeds), -1, size_bands(speeds, edges))  # the band `speed_band` names; -1: unknown
    table = [speed_band(lo, edges) for lo in edges]
    order = index[np.sort(np.unique(index, return_index=True)[1])].tolist()  # bands in order of first appearance
    return {table[k] if k >= 0 else UNKNOWN: band_parts(frames, batch, cfg, source, index == k, samples, pending)
            for k in order}


def size_band_parts(
    frames: Sequence[Frame], batch: FrameBatch | None, cfg: EvaluateConfig, source: str,
    flat: SampleFrames | None = None, pending: PendingCounts | None = None,
) -> dict[str, Any]:
    """The per-frame analyses per object-size band: every frame, keeping only the boxes whose height is in the band.

    The confusion of a band comes from the frames' one batch with the other bands' boxes masked out; PCD samples of
    every band from one extraction that pairs boxes and ground truth only within a band (`sample_table`'s
    ``size_edges``: the samples of the frames restricted to the band's boxes).
    """
    edges = cfg.evaluate.size_bands_px
    bands = [speed_band(lo, edges, "px") for lo in edges]  # every band of the edges, '>= last' included
    heights = np.fromiter((o.box.y_max - o.box.y_min for f in frames for o in (*f.ground_truth, *f.detections)),
                          np.float64)  # fmt: skip
    present = set(size_bands(heights, edges).tolist())
    if batch is not None:
        gt_batch = size_bands(batch.gt_boxes[:, 3] - batch.gt_boxes[:, 1], edges)
        det_batch = size_bands(batch.det_boxes[:, 3] - batch.det_boxes[:, 1], edges)
        by_band = MatchedRows.of(batch, cfg.confusion, (det_batch, gt_batch))  # pairs only within a band
    samples = [FrameSamples.of(flat or frames, t, cfg, source, edges) for t in cfg.evaluate.pcd_targets] if (
        "pcd" in cfg.evaluate.analyses) else None  # ``flat``: the episode's `sample_frames`, when the caller has it
    out = {}
    for k, name in enumerate(bands):
        if k not in present:
            continue
        part: dict[str, Any] = {"frames": len(frames)}
        if batch is not None:
            part["confusion"] = confusion_part(batch, cfg, source, rows=by_band.select_band(k), pending=pending)
        if samples is not None:
            part["pcd"] = {t.name: s.selected(s.band == k)
                           for t, s in zip(cfg.evaluate.pcd_targets, samples, strict=True)}  # fmt: skip
        out[name] = part
    return out


@dataclass
class Group:
    """One condition value's sums: frames, confusion matrices, PCD samples per target, and its bags."""

    frames: int = 0
    bags: list[str] = field(default_factory=list)
    confusions: list[DistanceConfusion] = field(default_factory=list)
    pcd: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(default_factory=dict)

    def add(self, part: Mapping[str, Any], bag: str) -> None:
        self.frames += part["frames"]
        if bag not in self.bags:
            self.bags.append(bag)
        if "confusion" in part:
            self.confusions.append(confusion_from_mapping(part["confusion"], bag))
        for name, q in part.get("pcd", {}).items():
            arrays = (np.asarray(q["x"], float), np.asarray(q["y"], float), np.asarray(q["missed"], bool))
            self.pcd.setdefault(name, []).append(arrays)

    def confusion(self) -> DistanceConfusion | None:
        return sum_confusions(self.confusions, source=", ".join(self.bags)) if self.confusions else None

    def samples(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return {
            name: tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[misc]
            for name, parts in self.pcd.items()
        }


def reduce_breakdowns(partials: Sequence[Mapping[str, Any]], attributes: Sequence[str]) -> dict[str, dict[str, Group]]:
    """``{attribute: {value: Group}}`` over every episode of the partials in input order (values in order of first
    appearance; bands in value order)."""
    from perception_safety.pipeline.bag_pass import episode_entries

    out: dict[str, dict[str, Group]] = {}
    for attr in attributes:
        groups: dict[str, Group] = {}
        for bag, ep in episode_entries(partials):
            if attr in PER_FRAME:
                for band, part in ep.get(PER_FRAME[attr], {}).items():
                    groups.setdefault(band, Group()).add(part, bag)
            else:
                value = str(ep.get("conditions", {}).get(attr, UNKNOWN))
                groups.setdefault(value, Group()).add(ep, bag)
        if attr in PER_FRAME:  # bands in value order, not order of appearance
            groups = dict(sorted(groups.items(), key=lambda kv: _band_key(kv[0])))
        out[attr] = groups
    return out


def _band_key(band: str) -> float:
    if band.startswith("["):
        return float(band[1:].split(",")[0])
    return float("inf")
