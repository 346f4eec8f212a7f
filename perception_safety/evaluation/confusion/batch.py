"""Columnar batches of frames: the flat array layout the vectorised confusion-matrix path works on."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.config import ClassMapper


@dataclass(frozen=True)
class FrameBatch:
    """``n`` frames flattened: frame ``f`` owns detections ``det_offsets[f]:det_offsets[f+1]`` (same for gt).

    Classes are evaluation-class indices (``0..n_classes-1``); labels that map to no
    evaluation class were left out when the batch was built and are counted there.
    """

    det_offsets: np.ndarray
    det_boxes: np.ndarray
    det_classes: np.ndarray
    gt_offsets: np.ndarray
    gt_boxes: np.ndarray
    gt_classes: np.ndarray
    gt_distances: np.ndarray
    unmapped_detections: Counter[str] = field(default_factory=Counter, compare=False)
    unmapped_ground_truth: Counter[str] = field(default_factory=Counter, compare=False)
    frame_stamps: np.ndarray | None = None
    """Stamp (ns) per frame; None when the input has none (CSV)."""
    gt_tracks: np.ndarray | None = None
    """Track id (str, '' = none) per ground-truth object; None when the input has none (CSV)."""
    frame_episodes: np.ndarray | None = None
    """Episode (str, '' = unknown) per frame (`Frame.episode`); None when the input has none (CSV)."""
    det_distances: np.ndarray | None = None
    """Ground-plane distance (m) per detection that carries a position (3D object lists), NaN where none."""
    det_scores: np.ndarray | None = None
    """Confidence per detection (AP ranks by it, evidence orders false detections by it); None: unknown (CSV)."""

    def __post_init__(self) -> None:
        nd, ng = len(self.det_boxes), len(self.gt_boxes)
        checks = (
            (len(self.det_offsets) == len(self.gt_offsets) and len(self.det_offsets) >= 1, "offsets"),
            (self.det_boxes.shape == (nd, 4) and self.gt_boxes.shape == (ng, 4), "box arrays must be (n, 4)"),
            (len(self.det_classes) == nd, "det_classes length"),
            (len(self.gt_classes) == ng and len(self.gt_distances) == ng, "gt_classes/gt_distances length"),
            (self.det_offsets[0] == 0 and self.det_offsets[-1] == nd, "det_offsets must span det_boxes"),
            (self.gt_offsets[0] == 0 and self.gt_offsets[-1] == ng, "gt_offsets must span gt_boxes"),
            (bool(np.all(np.diff(self.det_offsets) >= 0) and np.all(np.diff(self.gt_offsets) >= 0)), "offsets order"),
            (self.frame_stamps is None or len(self.frame_stamps) == len(self.det_offsets) - 1, "frame_stamps length"),
            (self.gt_tracks is None or len(self.gt_tracks) == ng, "gt_tracks length"),
            (self.frame_episodes is None or len(self.frame_episodes) == len(self.det_offsets) - 1, "frame_episodes"),
            (self.det_distances is None or len(self.det_distances) == nd, "det_distances length"),
            (self.det_scores is None or len(self.det_scores) == nd, "det_scores length"),
        )
        for ok, what in checks:
            if not ok:
                raise ValueError(f"FrameBatch: inconsistent arrays ({what})")

    def with_episode(self, episode: str) -> FrameBatch:
        """The same batch with ``episode`` for every frame that has none (a bag's frames: the bag's episode)."""
        own = self.frame_episodes if self.frame_episodes is not None else np.full(self.n_frames, "", dtype=object)
        return replace(self, frame_episodes=np.where(own == "", episode, own).astype(object))

    @property
    def n_frames(self) -> int:
        return len(self.det_offsets) - 1

    @classmethod
    def from_frames(cls, frames: Iterable[Frame], mapper: ClassMapper) -> FrameBatch:
        """Flatten frames, mapping labels with ``mapper`` and dropping (counting) unmapped ones."""
        det_off, gt_off = [0], [0]
        det_rows: list[tuple[float, float, float, float]] = []
        det_cls: list[int] = []
        det_dist: list[float] = []
        det_score: list[float] = []
        gt_rows: list[tuple[float, float, float, float]] = []
        gt_cls: list[int] = []
        gt_dist: list[float] = []
        gt_track: list[str] = []
        stamps: list[int] = []
        episodes: list[str] = []
        un_det: Counter[str] = Counter()
        un_gt: Counter[str] = Counter()
        for frame in frames:
            for d in frame.detections:
                code = mapper(d.class_id)
                if code < 0:
                    un_det[d.class_id] += 1
                    continue
                b = d.box
                det_rows.append((b.x_min, b.y_min, b.x_max, b.y_max))
                det_cls.append(code)
                det_dist.append(math.nan if d.position is None else math.hypot(d.position[0], d.position[1]))
                det_score.append(d.score)
            for g in frame.ground_truth:
                code = mapper(g.class_id)
                if code < 0:
                    un_gt[g.class_id] += 1
                    continue
                b = g.box
                gt_rows.append((b.x_min, b.y_min, b.x_max, b.y_max))
                gt_cls.append(code)
                gt_dist.append(g.distance)
                gt_track.append(g.track_id)
            stamps.append(frame.stamp_ns)
            episodes.append(frame.episode)
            det_off.append(len(det_cls))
            gt_off.append(len(gt_cls))
        return cls(
            det_offsets=np.asarray(det_off, dtype=np.int64),
            det_boxes=np.asarray(det_rows, dtype=np.float64).reshape(-1, 4),
            det_classes=np.asarray(det_cls, dtype=np.int64),
            gt_offsets=np.asarray(gt_off, dtype=np.int64),
            gt_boxes=np.asarray(gt_rows, dtype=np.float64).reshape(-1, 4),
            gt_classes=np.asarray(gt_cls, dtype=np.int64),
            gt_distances=np.asarray(gt_dist, dtype=np.float64),
            unmapped_detections=un_det,
            unmapped_ground_truth=un_gt,
            frame_stamps=np.asarray(stamps, dtype=np.int64),
            gt_tracks=np.asarray(gt_track, dtype=object),
            frame_episodes=np.asarray(episodes, dtype=object),
            det_distances=np.asarray(det_dist, dtype=np.float64),
            det_scores=np.asarray(det_score, dtype=np.float64),
        )
