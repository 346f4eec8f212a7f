"""Random columnar batches for the confusion tests (built in code): clustered boxes, so that many detections
compete, and optionally the awkward boxes a columnar batch can hold."""

from __future__ import annotations

import numpy as np

from perception_safety.core.matching import match_boxes
from perception_safety.evaluation.confusion.batch import FrameBatch


def random_batch(rng: np.random.Generator, n_frames: int, offset: float = 0.0, odd: bool = True) -> FrameBatch:
    """Clustered boxes (many competing pairs); with ``odd`` some NaN / inf / inverted / empty boxes and exact
    duplicate detections (IoU ties), and frames without detections or without objects."""
    det_rows, gt_rows, det_cls, gt_cls, d_off, g_off = [], [], [], [], [0], [0]
    for _ in range(n_frames):
        centres = rng.uniform(0, 100, size=(int(rng.integers(1, 4)), 2))
        for rows, cls in ((gt_rows, gt_cls), (det_rows, det_cls)):
            for _ in range(int(rng.integers(0, 8))):
                cx, cy = centres[rng.integers(len(centres))] + rng.normal(0, 3, 2)
                w, h = rng.uniform(2, 20, 2)
                rows.append([cx - w / 2 + offset, cy - h / 2, cx + w / 2 + offset, cy + h / 2])
                cls.append(int(rng.integers(0, 2)))
                if odd and rng.random() < 0.08:  # an exact duplicate: a tie between two detections or two objects
                    rows.append(list(rows[-1]))
                    cls.append(int(rng.integers(0, 2)))
                if odd and rng.random() < 0.06:
                    bad = list(rows[-1])
                    kind = int(rng.integers(0, 5))
                    if kind == 0:
                        bad[int(rng.integers(0, 4))] = np.nan
                    elif kind == 1:
                        bad[int(rng.integers(0, 4))] = float(rng.choice([np.inf, -np.inf]))
                    elif kind == 2:
                        bad[0], bad[2] = bad[2], bad[0]  # inverted
                    elif kind == 3:
                        bad[3] = bad[1]  # zero height
                    else:
                        bad = [np.nan] * 4
                    rows[-1] = bad
        d_off.append(len(det_rows))
        g_off.append(len(gt_rows))
    return FrameBatch(
        det_offsets=np.asarray(d_off, dtype=np.int64),
        det_boxes=np.asarray(det_rows, dtype=np.float64).reshape(-1, 4),
        det_classes=np.asarray(det_cls, dtype=np.int64),
        gt_offsets=np.asarray(g_off, dtype=np.int64),
        gt_boxes=np.asarray(gt_rows, dtype=np.float64).reshape(-1, 4),
        gt_classes=np.asarray(gt_cls, dtype=np.int64),
        gt_distances=rng.uniform(0, 50, len(gt_rows)),
    )


def per_frame(batch: FrameBatch, thr: float, class_aware: bool) -> np.ndarray:
    """The reference: `match_boxes` frame by frame, as global indices."""
    out = np.full(len(batch.gt_boxes), -1, dtype=np.int64)
    for f in range(batch.n_frames):
        d0, d1 = batch.det_offsets[f], batch.det_offsets[f + 1]
        g0, g1 = batch.gt_offsets[f], batch.gt_offsets[f + 1]
        with np.errstate(invalid="ignore"):
            m = match_boxes(
                batch.det_boxes[d0:d1],
                batch.gt_boxes[g0:g1],
                thr,
                batch.det_classes[d0:d1].tolist(),
                batch.gt_classes[g0:g1].tolist(),
                class_aware,
            )
        out[g0 + m.gt_indices] = d0 + m.det_indices
    return out
