"""Non-maximum suppression with OpenCV (``cv2.dnn.NMSBoxesBatched``: per class, greedy by score)."""

from __future__ import annotations

import numpy as np


def nms(boxes: np.ndarray, scores: np.ndarray, class_idx: np.ndarray, score_threshold: float, iou_threshold: float,
        max_detections: int) -> np.ndarray:
    """Indices kept, best score first: per class, a box overlapping a better one by IoU > ``iou_threshold`` goes.

    ``boxes`` (n, 4) as ``x_min, y_min, x_max, y_max``; boxes below ``score_threshold`` are dropped first.
    """
    import cv2

    keep = np.flatnonzero(scores >= score_threshold)
    if keep.size == 0:
        return keep
    b = boxes[keep].astype(np.float64)
    xywh = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    idx = cv2.dnn.NMSBoxesBatched(xywh.tolist(), scores[keep].astype(float).tolist(),
                                  class_idx[keep].astype(int).tolist(), float(score_threshold), float(iou_threshold))
    idx = keep[np.asarray(idx, dtype=np.int64).reshape(-1)]
    order = np.argsort(-scores[idx], kind="stable")
    return idx[order][:max_detections]
