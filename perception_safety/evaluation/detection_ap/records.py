"""Per-detection AP records of many images, kept as mergeable columns (the map step's partial of AP).

For each image and evaluation class the detections are matched once for every evaluated range (pooled and
each distance bin, `matching.match_image`); a detection's outcome per range and threshold is stored as two
bit masks (TP, FP: bit ``t`` = threshold ``t``), beside its score, class and episode. Regular ground truth is
counted per range, class and episode. Records of several inputs concatenate in input order, so AP, its
per-episode bootstrap and every count come from the sums alone.

Ranges: ``pooled`` is ``[first edge, last edge)`` and bin ``k`` is ``[e_k, e_k+1)`` (half-open, as the confusion
matrices). Ground truth outside a range is ignored there (a detection matched to it counts neither way); an
*unmatched* detection counts as a false positive in the range that holds its own estimated distance and is
ignored in the others. A detection without a distance estimate (no camera model, box bottom above the horizon)
is a false positive of the pooled range only; the report counts such detections per class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.evaluation.detection_ap.matching import AP50, IOU_THRESHOLDS, match_image

_BITS = 1 << np.arange(len(IOU_THRESHOLDS), dtype=np.int64)


def _pack(flags: np.ndarray) -> np.ndarray:
    """``(R, T, K)`` bools -> ``(R, K)`` ints with bit ``t`` set where threshold ``t`` is True."""
    return np.tensordot(flags.astype(np.int64), _BITS, axes=([1], [0]))


def unpack(bits: np.ndarray) -> np.ndarray:
    """``(N,)`` ints -> ``(T, N)`` bools (inverse of the packing)."""
    return (np.asarray(bits, dtype=np.int64)[None, :] & _BITS[:, None]) != 0


@dataclass
class APRecords:
    """The mergeable state of the AP computation (see the module docstring)."""

    classes: tuple[str, ...]
    edges: tuple[float, ...]
    max_detections: int = 100
    episodes: list[str] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    cls: list[int] = field(default_factory=list)
    episode: list[int] = field(default_factory=list)
    tp: list[list[int]] = field(default_factory=list)
    """Per detection, per range: the TP bit mask."""
    fp: list[list[int]] = field(default_factory=list)
    n_gt: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """``(range, class, episode) -> regular ground-truth count`` (only non-zero entries)."""
    without_distance: list[int] = field(default_factory=list)
    """Per class: false positives (pooled, IoU 0.5) without a distance estimate: in no bin's AP."""

    def __post_init__(self) -> None:
        if not self.without_distance:
            self.without_distance = [0] * len(self.classes)

    @property
    def ranges(self) -> list[tuple[float, float]]:
        """``pooled`` first, then the bins."""
        e = self.edges
        return [(e[0], e[-1])] + [(e[i], e[i + 1]) for i in range(len(e) - 1)]

    def _episode_index(self, name: str) -> int:
        try:
            return self.episodes.index(name)
        except ValueError:
            self.episodes.append(name)
            return len(self.episodes) - 1

    def add_image(
        self,
        episode: str,
        det_boxes: np.ndarray,
        det_scores: np.ndarray,
        det_classes: np.ndarray,
        det_distances: np.ndarray,
        gt_boxes: np.ndarray,
        gt_classes: np.ndarray,
        gt_distances: np.ndarray,
        gt_crowd: np.ndarray | None = None,
    ) -> None:
        """One image: classes are indices into ``classes`` (-1 = unmapped, left out); distances in metres (NaN =
        unknown, for detections only); ``gt_crowd`` marks crowd/ignore regions: of their class (COCO ``iscrowd``),
        or of every class when their label maps to none (KITTI ``DontCare``)."""
        det_classes = np.asarray(det_classes, dtype=np.int64)
        gt_classes = np.asarray(gt_classes, dtype=np.int64)
        crowd = np.zeros(len(gt_classes), bool) if gt_crowd is None else np.asarray(gt_crowd, dtype=bool)
        det_d = np.asarray(det_distances, dtype=np.float64)
        gt_d = np.asarray(gt_distances, dtype=np.float64)
        ranges = self.ranges
        lo = np.array([r[0] for r in ranges])[:, None]
        hi = np.array([r[1] for r in ranges])[:, None]
        ep = self._episode_index(episode)
        anyclass = crowd & (gt_classes < 0)
        for c in np.unique(np.concatenate([det_classes, gt_classes])):
            if c < 0:
                continue
            ds, gs = det_classes == c, (gt_classes == c) | anyclass
            gd = gt_d[gs][None, :]
            ignore = ~((gd >= lo) & (gd < hi))
            dd = det_d[ds][None, :]
            outside = ~((dd >= lo) & (dd < hi))  # NaN: outside every range ...
            outside[0] &= ~np.isnan(dd[0])  # ... except pooled
            m = match_image(
                np.asarray(det_boxes)[ds], np.asarray(det_scores)[ds], np.asarray(gt_boxes)[gs], ignore,
                crowd[gs], outside, max_detections=self.max_detections,
            )  # fmt: skip
            for r, n in enumerate(m.n_gt):
                if n:
                    key = (r, int(c), ep)
                    self.n_gt[key] = self.n_gt.get(key, 0) + int(n)
            if not len(m.kept):
                continue
            self.without_distance[c] += int((np.isnan(det_d[ds][m.kept]) & m.fp[0, AP50]).sum())
            self.score += np.asarray(det_scores, dtype=np.float64)[ds][m.kept].tolist()
            self.cls += [int(c)] * len(m.kept)
            self.episode += [ep] * len(m.kept)
            self.tp += _pack(m.tp).T.tolist()
            self.fp += _pack(m.fp).T.tolist()

    def merge(self, other: APRecords) -> APRecords:
        """Append ``other`` (same classes and edges) after this one; episodes are matched by name."""
        if other.classes != self.classes or tuple(other.edges) != tuple(self.edges):
            raise ValueError("AP records of different classes or distance bins cannot be merged")
        remap = [self._episode_index(name) for name in other.episodes]
        self.score += other.score
        self.cls += other.cls
        self.episode += [remap[e] for e in other.episode]
        self.tp += other.tp
        self.fp += other.fp
        for (r, c, e), n in other.n_gt.items():
            key = (r, c, remap[e])
            self.n_gt[key] = self.n_gt.get(key, 0) + n
        self.without_distance = [a + b for a, b in zip(self.without_distance, other.without_distance, strict=True)]
        return self

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (the partial of the map step)."""
        return {
            "classes": list(self.classes), "edges": list(self.edges), "max_detections": self.max_detections,
            "episodes": self.episodes, "score": self.score, "cls": self.cls, "episode": self.episode,
            "tp": self.tp, "fp": self.fp, "n_gt": [[r, c, e, n] for (r, c, e), n in self.n_gt.items()],
            "without_distance": self.without_distance,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> APRecords:
        return cls(
            tuple(d["classes"]), tuple(d["edges"]), d["max_detections"], list(d["episodes"]), list(d["score"]),
            list(d["cls"]), list(d["episode"]), [list(t) for t in d["tp"]], [list(f) for f in d["fp"]],
            {(r, c, e): n for r, c, e, n in d["n_gt"]}, list(d["without_distance"]),
        )  # fmt: skip


def merge_records(parts: Sequence[APRecords]) -> APRecords | None:
    """All parts appended in order (None for none)."""
    if not parts:
        return None
    out = APRecords(parts[0].classes, parts[0].edges, parts[0].max_detections)
    for p in parts:
        out.merge(p)
    return out
