"""COCO-style average precision from TP/FP flags pooled over images: 101-point interpolated precision.

Detections of all images are ranked by descending score (stable: input order breaks ties, as COCO's merge
sort over its image order does); precision is made non-increasing in recall (the envelope) and read at the
recall points 0, 0.01, ..., 1 (zero beyond the highest recall reached); AP at one threshold is their mean, and
COCO AP the mean over the thresholds 0.50:0.05:0.95. With no regular ground truth AP is undefined (``None``).
Weighted counts (``weights``) give the same computation for a resample of episodes (the bootstrap).

Only the last rank of each run of true positives (at the threshold) is evaluated: between two such ends precision
only falls, and within a run it only rises, so the envelope read at the recall points is the same as over every
rank (and is computed on exact integer counts, so the numbers are identical); this keeps the bootstrap's
(resamples x thresholds x ranks) work to the runs, and a resample's counts are sums over distinct (run, episode)
pairs (the 16 identical copies of a detection in a run: one product, not 16 additions).
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
    first = _first_counts(n)
    for t in range(tp.shape[0] if tp.shape[1] else 0):
        out[:, t] = _at_recall_points(tp[t], fp[t], w, unit, n, first)
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


def _running_sums(w: np.ndarray, unit: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """``(B, groups)``: per row, the weight (``w`` of each rank's ``unit``) summed over the ranks of groups ``0..g``
    for each group ``g`` (``group`` non-decreasing); a unit met k times in one group is one product ``k * w``, so the
    work is the distinct (group, unit) pairs (16 copies of one episode's detection in a run: one pair). Integer
    sums: exact."""
    if group.size == 0:
        return np.zeros((len(w), groups), dtype=w.dtype)
    keys = np.sort(group * w.shape[1] + unit, kind="stable")  # by group, then unit (already ordered by group: timsort
    # merges the short runs in linear time)
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    pairs, count = keys[first], np.diff(np.r_[first, keys.size])
    of_pair, unit_of_pair = np.divmod(pairs, w.shape[1])
    values = w.take(unit_of_pair, axis=1)
    if count.max() > 1:
        values *= count.astype(w.dtype)
    sums = np.cumsum(np.concatenate([np.zeros((len(w), 1), dtype=w.dtype), values], axis=1), axis=1, dtype=w.dtype)
    return sums.take(np.searchsorted(of_pair, np.arange(groups), side="right"), axis=1)


def _first_counts(n: np.ndarray) -> np.ndarray:
    """``(B, 101)``: per row, the least integer count m with ``m / n >= RECALL_POINTS[k]`` in float arithmetic
    (``ceil(point * n)``, corrected by the same division the recall uses), so integer counts compare exactly."""
    n = np.where(n > 0, n, 1.0)[:, None]  # rows without ground truth are discarded by the caller
    m = np.ceil(RECALL_POINTS[None, :] * n)
    for _ in range(2):
        m -= (m > 0) & ((m - 1) / n >= RECALL_POINTS)
        m += m / n < RECALL_POINTS
    return m


def _at_recall_points(
    tp: np.ndarray, fp: np.ndarray, w: np.ndarray, unit: np.ndarray, n: np.ndarray, first_counts: np.ndarray
) -> np.ndarray:
    """``(B, 101)`` interpolated precision at one threshold from the last rank of each run of true positives
    (``first_counts``: `_first_counts` of ``n``).

    Within a run of true positives (no false positive between them) precision only rises — ``(a + w) / (b + w) >=
    a / b`` for ``a <= b`` and exact integer counts, and a correctly rounded division keeps that order — so the best
    precision from any rank of the run on is reached at the run's end or later, and the first rank reaching a recall
    point lies in the first run whose end reaches it: the envelope read at the recall points is the one over every
    rank, bit for bit, from the runs' ends alone. Each run's TP weight and the FP weight before it are sums over
    (run, unit) pairs (`_running_sums`); one search over all rows (the counts of each row offset past the previous
    row's) finds each point's first run, and the best precision of each stretch between consecutive points' first
    runs is a `reduceat`.
    """
    rise = np.flatnonzero(tp)
    rows, k = len(w), len(RECALL_POINTS)
    if rise.size == 0:
        return np.zeros((rows, k))
    fp_before = np.cumsum(fp)[rise]  # false positives ranked above each true positive
    new_run = np.r_[True, fp_before[1:] != fp_before[:-1]]
    run = np.cumsum(new_run) - 1
    s = int(run[-1]) + 1
    counts = _running_sums(w, unit[rise], run, s)  # integer-valued: exact
    fpos = np.flatnonzero(fp)
    gap = np.searchsorted(fp_before[new_run], np.arange(fpos.size), side="right")  # the run each FP precedes
    ahead = gap < s  # false positives after the last true positive change no precision read
    fp_counts = _running_sums(w, unit[fpos[ahead]], gap[ahead], s)
    seen = (counts + fp_counts).astype(np.float64, copy=False)
    tps = counts.astype(np.float64, copy=False)
    precision = np.append((tps / (seen + EPS)).ravel(), 0.0)
    offset = (np.arange(rows) * (np.max(n, initial=0.0) + tps[:, -1].max() + 2.0))[:, None]
    first = np.searchsorted((tps + offset).ravel(), (first_counts + offset).ravel(), side="left")
    first = first.reshape(rows, k) - (np.arange(rows) * s)[:, None]  # run within the row; s = never reached
    bounds = np.concatenate([first, np.full((rows, 1), s)], axis=1) + (np.arange(rows) * s)[:, None]
    best = np.maximum.reduceat(precision, bounds.ravel()).reshape(rows, k + 1)[:, :k]
    best[np.diff(bounds, axis=1) == 0] = 0.0  # an empty stretch (reduceat gives its next element)
    best = np.flip(np.maximum.accumulate(np.flip(best, axis=1), axis=1), axis=1)
    best[first >= s] = 0.0  # the recall never reaches the point
    return best
