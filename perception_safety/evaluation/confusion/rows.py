"""A batch matched once, kept per row: what each object, detection and frame adds to the counts (Algorithms 1-2).

Matching is per frame, so the counts of any selection of a batch's frames are the sum of its frames' parts: the
episode batch is matched once (`MatchedRows.of`) and every selection the evaluate map counts (each verdict, each
ego-speed band, each episode) is a gather of rows (`select_frames`), counted by `ConfusionAccumulator.add_rows`
(equal to ``add_batch(subset.select_frames(batch, keep))``, tested). Object-size bands restrict the boxes, which
changes the matching: they are matched once with pairs only within a band (``groups``) and selected by band
(`select_band`), equal to matching every band's boxes on their own.
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.binning import bin_index
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.ground_distance import detection_distances
from perception_safety.evaluation.confusion.matching import frame_index, match_batch_groups


@dataclass(frozen=True)
class MatchedRows:
    """Per object, detection and frame of a matched batch, the values its counts are built from."""

    n_frames: int
    gt_frame: np.ndarray
    gt_bin: np.ndarray
    """Distance bin (`bin_index`; outside ``[0, n_bins)``: not binned)."""
    gt_pred: np.ndarray
    """Predicted class of the matched detection, ``n_classes`` (empty) when missed."""
    gt_true: np.ndarray
    gt_dist: np.ndarray
    det_frame: np.ndarray
    det_cls: np.ndarray
    det_matched: np.ndarray
    det_out: np.ndarray
    """Matched to an object outside the distance bins."""
    det_bin: np.ndarray | None
    """Distance bin of the detection's estimate (carried or ground-plane), ``n_bins`` where none; None: none has
    one (no camera, no carried distance)."""
    hard_frame: np.ndarray
    """Frame of each (frame, group) the per-frame Hungarian solved."""
    hard_group: np.ndarray
    gt_group: np.ndarray | None = None
    det_group: np.ndarray | None = None
    frame_episodes: np.ndarray | None = None
    frame_stamps: np.ndarray | None = None
    gt_tracks: np.ndarray | None = None
    unmapped_detections: Counter[str] = field(default_factory=Counter)
    unmapped_ground_truth: Counter[str] = field(default_factory=Counter)
    config: ConfusionConfig | None = None
    """The config it was matched and binned with (`ConfusionAccumulator.add_rows` refuses rows of another)."""

    @classmethod
    def of(
        cls, batch: FrameBatch, cfg: ConfusionConfig, groups: tuple[np.ndarray, np.ndarray] | None = None
    ) -> MatchedRows:
        """Match ``batch`` once (``groups``: ``(det_group, gt_group)``, pairs only within a group)."""
        n_cls, n_bins = len(cfg.classes), len(cfg.bins)
        edges = np.asarray(cfg.bin_edges, dtype=np.float64)
        det_frame, gt_frame = frame_index(batch.det_offsets), frame_index(batch.gt_offsets)
        gt_match, hard_frame, hard_group = match_batch_groups(batch, cfg, (det_frame, gt_frame), groups)
        n_det = len(batch.det_boxes)
        # gt_match -1 (missed) takes the appended last entry: ``empty`` (Remark 1).
        pred = np.append(batch.det_classes, n_cls).take(gt_match)
        b = bin_index(batch.gt_distances, edges)
        matched = np.zeros(n_det + 1, dtype=bool)  # the last entry takes the -1 of missed objects
        matched[gt_match] = True
        out = np.zeros(n_det + 1, dtype=bool)
        out[gt_match[(b < 0) | (b >= n_bins)]] = True
        det_bin = None
        carried = batch.det_distances if batch.det_distances is not None else np.full(n_det, np.nan)
        if n_det and (cfg.ground_camera is not None or np.isfinite(carried).any()):
            d = detection_distances(carried, batch.det_boxes[:, 3], cfg.ground_camera)
            kb = bin_index(np.nan_to_num(d, nan=-1.0), edges)
            det_bin = np.where(np.isfinite(d) & (kb >= 0) & (kb < n_bins), kb, n_bins)
        return cls(
            batch.n_frames, gt_frame, b, pred, batch.gt_classes, batch.gt_distances,
            det_frame, batch.det_classes, matched[:n_det], out[:n_det], det_bin, hard_frame, hard_group,
            None if groups is None else groups[1], None if groups is None else groups[0],
            batch.frame_episodes, batch.frame_stamps, batch.gt_tracks,
            batch.unmapped_detections, batch.unmapped_ground_truth, cfg,
        )  # fmt: skip

    def _take(self, gi: np.ndarray, di: np.ndarray, gt_frame: np.ndarray, det_frame: np.ndarray,
              n_frames: int, frames: np.ndarray | None, hard: np.ndarray) -> MatchedRows:  # fmt: skip
        """The rows ``gi`` / ``di`` (frames renumbered by the caller; ``frames``: the kept frames, None = all)."""
        def per_frame(a: np.ndarray | None) -> np.ndarray | None:
            return a if a is None or frames is None else a.take(frames)

        return MatchedRows(
            n_frames, gt_frame, self.gt_bin.take(gi), self.gt_pred.take(gi), self.gt_true.take(gi),
            self.gt_dist.take(gi), det_frame, self.det_cls.take(di), self.det_matched.take(di),
            self.det_out.take(di), None if self.det_bin is None else self.det_bin.take(di),
            self.hard_frame.take(hard), self.hard_group.take(hard),
            None, None, per_frame(self.frame_episodes), per_frame(self.frame_stamps),
            None if self.gt_tracks is None else self.gt_tracks.take(gi), config=self.config,
        )  # fmt: skip

    def select_frames(self, keep: np.ndarray) -> MatchedRows:
        """The rows of the frames whose mask is True: what matching ``subset.select_frames(batch, keep)`` gives
        (labels that map to no class are counted in the whole batch only, as there)."""
        keep = np.asarray(keep, dtype=bool)
        frames = np.flatnonzero(keep)
        new = np.cumsum(keep, dtype=np.int64)
        new -= 1
        gi, di = np.flatnonzero(keep.take(self.gt_frame)), np.flatnonzero(keep.take(self.det_frame))
        hard = np.flatnonzero(keep.take(self.hard_frame))
        gt_frame, det_frame = new.take(self.gt_frame.take(gi)), new.take(self.det_frame.take(di))
        return self._take(gi, di, gt_frame, det_frame, len(frames), frames, hard)

    def select_band(self, band: int) -> MatchedRows:
        """Every frame with only the boxes of group ``band`` (rows matched with ``groups``): what matching
        ``subset.select_objects(batch, gt_group == band, det_group == band)`` gives."""
        if self.gt_group is None or self.det_group is None:
            raise ValueError("select_band needs rows matched with groups")
        gi, di = np.flatnonzero(self.gt_group == band), np.flatnonzero(self.det_group == band)
        hard = np.flatnonzero(self.hard_group == band)
        return self._take(gi, di, self.gt_frame.take(gi), self.det_frame.take(di), self.n_frames, None, hard)


_LAST: list[tuple[weakref.ref[FrameBatch], ConfusionConfig, MatchedRows]] = []


def matched_rows(batch: FrameBatch, cfg: ConfusionConfig) -> MatchedRows:
    """`MatchedRows.of` the batch, matched once for all callers that share this batch object (the evaluate map's
    episode batch: all frames, verdicts, speed bands); the last batch's rows are kept while the batch lives."""
    if _LAST:
        ref, last_cfg, rows = _LAST[0]
        if ref() is batch and (last_cfg is cfg or last_cfg == cfg):
            return rows
    rows = MatchedRows.of(batch, cfg)
    _LAST[:] = [(weakref.ref(batch), cfg, rows)]
    return rows
