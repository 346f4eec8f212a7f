"""COCO-style average precision from TP/FP flags pooled over images: 101-point interpolated precision.

Detections of all images are ranked by descending score (stable: input order breaks ties, as COCO's merge
sort over its image order does); precision is made non-increasing in recall (the envelope) and read at the
recall points 0, 0.01, ..., 1 (zero beyond the highest recall reached); AP at one threshold is their mean, and
COCO AP the mean over the thresholds 0.50:0.05:0.95. With no regular ground truth AP is undefined (``None``).
Weighted counts (``weights``) give the same computation for a resample of episodes (the bootstrap).

Only the ranks where recall can rise (a true positive at the threshold) are evaluated: between two of them
precision only falls, so the envelope read at the recall points is the same as over every rank (and is
computed on exact integer counts, so the numbers are identical); this keeps the bootstrap's
(resamples x thresholds x ranks) work to the true positives.
"""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.detection_ap.matching import RECALL_POINTS

EPS = np.spacing(1)


def precision_at_recall_points(
    scores: np.ndarray,
    tp: np.ndarray,
    fp: np.ndarray,
    n_gt: float,
    weights: np.ndarray | None = None,
    episode: np.ndarray | None = None,
) -> np.ndarray | None:
    """``(T, 101)`` interpolated precision; ``tp``/``fp`` are ``(T, N)`` flags; None when ``n_gt == 0``.

    With ``weights`` of shape ``(B, N)`` (one row per resample) the result is ``(B, T, 101)`` and ``n_gt`` an
    array of ``B`` weighted ground-truth counts (rows with zero ground truth are NaN). With ``episode`` (``(N,)``
    index of each detection's episode) ``weights`` are per episode, ``(B, E)``.
    """
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    tp = np.asarray(tp, dtype=bool)[:, order]
    fp = np.asarray(fp, dtype=bool)[:, order]
    if weights is None:
        if n_gt <= 0:
            return None
        w, unit, n = np.ones((1, 1)), np.zeros(len(order), dtype=np.int64), np.asarray([float(n_gt)])
    else:
        w = np.asarray(weights, dtype=np.float64)
        unit = order if episode is None else np.asarray(episode, dtype=np.int64)[order]
        n = np.asarray(n_gt, dtype=np.float64).reshape(-1)
    out = np.zeros((len(w), tp.shape[0], len(RECALL_POINTS)))
    w = _counts(w, len(order))
    for t in range(tp.shape[0] if tp.shape[1] else 0):
        out[:, t] = _at_recall_points(tp[t], fp[t], w, unit, n)
    if weights is None:
        return out[0]
    out[n <= 0] = np.nan
    return out


def _counts(w: np.ndarray, ranks: int) -> np.ndarray:
    """The weights, which must be whole non-negative counts (a resample's draws: the search for each recall point's
    first rank compares integer counts); as int32 when their sums over ``ranks`` ranks fit, so the running sums are
    exact integers in half the memory traffic of float64 and the precision from them is the float64 computation's,
    bit for bit."""
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and np.all(w == np.floor(w))):
        raise ValueError("weights must be whole non-negative counts (how often each unit was drawn)")
    if w.size and float(w.max()) * max(ranks, 1) < 2**31:
        return w.astype(np.int32)
    return w


def _cumsum_at(flags: np.ndarray, w: np.ndarray, unit: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``(B, len(at))``: per row, the weight (``w`` of each rank's ``unit``) summed over the flagged ranks up to and
    including each rank in ``at``."""
    pos = np.flatnonzero(flags)
    if pos.size == 0:
        return np.zeros((len(w), len(at)), dtype=w.dtype)
    sums = np.cumsum(np.concatenate([np.zeros((len(w), 1), dtype=w.dtype), w.take(unit[pos], axis=1)], axis=1),
                     axis=1, dtype=w.dtype)
    return sums.take(np.searchsorted(pos, at, side="right"), axis=1)


def _first_counts(n: np.ndarray) -> np.ndarray:
    """``(B, 101)``: per row, the least integer count m with ``m / n >= RECALL_POINTS[k]`` in float arithmetic
    (``ceil(point * n)``, corrected by the same division the recall uses), so integer counts compare exactly."""
    n = np.where(n > 0, n, 1.0)[:, None]  # rows without ground truth are discarded by the caller
    m = np.ceil(RECALL_POINTS[None, :] * n)
    for _ in range(2):
        m -= (m > 0) & ((m - 1) / n >= RECALL_POINTS)
        m += m / n < RECALL_POINTS
    return m


def _at_recall_points(tp: np.ndarray, fp: np.ndarray, w: np.ndarray, unit: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``(B, 101)`` interpolated precision at one threshold from the ranks where recall can rise.

    Point k's value is the best precision from the first rank whose recall reaches the point on (the envelope): one
    search over all rows (the counts of each row offset past the previous row's) finds each point's first rank,
    and the best precision of each stretch between consecutive points' first ranks is a `reduceat`.
    """
    rise = np.flatnonzero(tp)
    rows, k, s = len(w), len(RECALL_POINTS), rise.size
    if s == 0:
        return np.zeros((rows, k))
    counts = np.cumsum(w.take(unit[rise], axis=1), axis=1, dtype=w.dtype)  # integer-valued: exact
    seen = (counts + _cumsum_at(fp, w, unit, rise)).astype(np.float64, copy=False)
    tps = counts.astype(np.float64, copy=False)
    precision = np.append((tps / (seen + EPS)).ravel(), 0.0)
    offset = (np.arange(rows) * (np.max(n, initial=0.0) + tps[:, -1].max() + 2.0))[:, None]
    first = np.searchsorted((tps + offset).ravel(), (_first_counts(n) + offset).ravel(), side="left")
    first = first.reshape(rows, k) - (np.arange(rows) * s)[:, None]  # rank within the row; s = never reached
    bounds = np.concatenate([first, np.full((rows, 1), s)], axis=1) + (np.arange(rows) * s)[:, None]
    best = np.maximum.reduceat(precision, bounds.ravel()).reshape(rows, k + 1)[:, :k]
    best[np.diff(bounds, axis=1) == 0] = 0.0  # an empty stretch (reduceat gives its next element)
    best = np.flip(np.maximum.accumulate(np.flip(best, axis=1), axis=1), axis=1)
    best[first >= s] = 0.0  # the recall never reaches the point
    return best
