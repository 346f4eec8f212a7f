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
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, sum_confusions
from perception_safety.evaluation.confusion.io import confusion_from_mapping, to_json_dict
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.pcd.samples import samples_from_frames
from perception_safety.pipeline.evaluate_config import EvaluateConfig

SPEED_BAND = "ego_speed_band"
SIZE_BAND = "object_size_band"
PER_FRAME = {SPEED_BAND: "speed_bands", SIZE_BAND: "size_bands"}
"""Attributes split inside a bag, and the partial key holding their per-band parts."""
UNKNOWN = "unknown"


def frame_parts(frames: Sequence[Frame], cfg: EvaluateConfig, source: str) -> dict[str, Any]:
    """The per-frame analyses of a set of frames as JSON: confusion matrices and PCD samples per target."""
    analyses = set(cfg.evaluate.analyses)
    out: dict[str, Any] = {"frames": len(frames)}
    if analyses & {"confusion", "verification"}:
        out["confusion"] = to_json_dict(ConfusionAccumulator(cfg.confusion).add_frames(frames).result(source=source))
    if "pcd" in analyses:
        out["pcd"] = {}
        for t in cfg.evaluate.pcd_targets:
            s = samples_from_frames(
                frames,
                t.class_id,
                t.track_id,
                t.iou_threshold,
                t.class_aware,
                source,
                cfg.pcd.samples.input,
                cfg.pcd.bootstrap.unit,
            )
            out["pcd"][t.name] = {
                "x": s.x.tolist(),
                "y": s.y.tolist(),
                "missed": s.missed.tolist(),
                "group": [str(g) for g in s.group] if s.group is not None else None,
                "input": s.input,
            }
    return out


def speed_band(speed: float | None, edges: Sequence[float], unit: str = "m/s") -> str:
    """``"[lo, hi) m/s"`` of the ego speed (or any value in ``unit``), ``"unknown"`` when absent or below the edges."""
    if speed is None:
        return UNKNOWN
    for lo, hi in pairwise(edges):
        if lo <= speed < hi:
            return f"[{lo:g}, {hi:g}) {unit}"
    return f">= {edges[-1]:g} {unit}" if speed >= edges[-1] else UNKNOWN


def speed_band_parts(frames: Sequence[Frame], cfg: EvaluateConfig, source: str) -> dict[str, Any]:
    """`frame_parts` per ego-speed band (bands in edge order)."""
    edges = cfg.evaluate.speed_bands_mps
    groups: dict[str, list[Frame]] = {}
    for f in frames:
        groups.setdefault(speed_band(f.ego.speed if f.ego is not None else None, edges), []).append(f)
    return {band: frame_parts(fs, cfg, source) for band, fs in groups.items()}


def size_band_parts(frames: Sequence[Frame], cfg: EvaluateConfig, source: str) -> dict[str, Any]:
    """`frame_parts` per object-size band: every frame, keeping only the boxes whose height is in the band."""
    edges = cfg.evaluate.size_bands_px

    def band(box: Any) -> str:
        return speed_band(box.y_max - box.y_min, edges, "px")

    bands = [speed_band(lo, edges, "px") for lo in edges]  # every band of the edges, '>= last' included
    out = {}
    for name in bands:
        kept = [
            replace(
                f,
                ground_truth=tuple(g for g in f.ground_truth if band(g.box) == name),
                detections=tuple(d for d in f.detections if band(d.box) == name),
                candidates=None if f.candidates is None else tuple(c for c in f.candidates if band(c.box) == name),
            )
            for f in frames
        ]
        if any(f.ground_truth or f.detections for f in kept):
            out[name] = frame_parts(kept, cfg, source)
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
    """``{attribute: {value: Group}}`` in input order (values in order of first appearance)."""
    out: dict[str, dict[str, Group]] = {}
    for attr in attributes:
        groups: dict[str, Group] = {}
        for p in partials:
            if attr in PER_FRAME:
                for band, part in p.get(PER_FRAME[attr], {}).items():
                    groups.setdefault(band, Group()).add(part, p["bag"])
            else:
                value = str(p.get("conditions", {}).get(attr, UNKNOWN))
                groups.setdefault(value, Group()).add(p, p["bag"])
        if attr in PER_FRAME:  # bands in value order, not order of appearance
            groups = dict(sorted(groups.items(), key=lambda kv: _band_key(kv[0])))
        out[attr] = groups
    return out


def _band_key(band: str) -> float:
    if band.startswith("["):
        return float(band[1:].split(",")[0])
    return float("inf")
