"""COCO-style average precision from TP/FP flags pooled over images: 101-point interpolated precision.

Detections of all images are ranked by descending score (stable: input order breaks ties, as COCO's merge
sort over its image order does); precision is made non-increasing in recall (the envelope) and read at the
recall points 0, 0.01, ..., 1 (zero beyond the highest recall reached); AP at one threshold is their mean, and
COCO AP the mean over the thresholds 0.50:0.05:0.95. With no regular ground truth AP is undefined (``None``).
Weighted counts (``weights``) give the same computation for a resample of episodes (the bootstrap).
"""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.detection_ap.matching import RECALL_POINTS

EPS = np.spacing(1)


def precision_at_recall_points(
    scores: np.ndarray, tp: np.ndarray, fp: np.ndarray, n_gt: float, weights: np.ndarray | None = None
) -> np.ndarray | None:
    """``(T, 101)`` interpolated precision; ``tp``/``fp`` are ``(T, N)`` flags; None when ``n_gt == 0``.

    With ``weights`` of shape ``(B, N)`` (one row per resample) the result is ``(B, T, 101)`` and ``n_gt`` an
    array of ``B`` weighted ground-truth counts (rows with zero ground truth are NaN).
    """
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    tp = np.asarray(tp, dtype=bool)[:, order]
    fp = np.asarray(fp, dtype=bool)[:, order]
    if weights is None:
        if n_gt <= 0:
            return None
        tps = np.cumsum(tp, axis=1, dtype=np.float64)
        fps = np.cumsum(fp, axis=1, dtype=np.float64)
        n = np.asarray(float(n_gt))
    else:
        w = np.asarray(weights, dtype=np.float64)[:, order][:, None, :]  # (B, 1, N)
        tps = np.cumsum(tp[None] * w, axis=2)
        fps = np.cumsum(fp[None] * w, axis=2)
        n = np.asarray(n_gt, dtype=np.float64)[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = tps / n
    precision = tps / (tps + fps + EPS)
    envelope = np.flip(np.maximum.accumulate(np.flip(precision, axis=-1), axis=-1), axis=-1)
    out = np.zeros((*precision.shape[:-1], len(RECALL_POINTS)))
    if precision.shape[-1]:
        flat_r = recall.reshape(-1, recall.shape[-1])
        flat_p = envelope.reshape(-1, envelope.shape[-1])
        flat_o = out.reshape(-1, len(RECALL_POINTS))
        for i in range(len(flat_r)):
            idx = np.searchsorted(flat_r[i], RECALL_POINTS, side="left")
            ok = idx < flat_r.shape[1]
            flat_o[i, ok] = flat_p[i, idx[ok]]
    if weights is not None:
        out[np.asarray(n_gt) <= 0] = np.nan
    return out
