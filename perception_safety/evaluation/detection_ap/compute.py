"""AP, AP50 and AP75 per class, pooled and per distance bin, with a bootstrap interval over episodes.

The point values are COCO's (`precision.precision_at_recall_points`: AP = mean interpolated precision over
the 101 recall points and the thresholds 0.50:0.05:0.95; AP50 and AP75 at one threshold). Frames of one
episode are not independent, so the interval resamples whole episodes with replacement (percentile bootstrap,
``n_boot`` resamples, fixed seed): every detection and ground-truth object of a drawn episode counts as often as
the episode was drawn. Fewer than two episodes give no interval (said in ``interval_note``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perception_safety.evaluation.detection_ap.matching import AP50, AP75, IOU_THRESHOLDS
from perception_safety.evaluation.detection_ap.precision import precision_at_recall_points
from perception_safety.evaluation.detection_ap.records import APRecords, unpack

NAMES = ("ap", "ap50", "ap75")


def _summaries(precision: np.ndarray) -> np.ndarray:
    """``(..., T, 101)`` precision -> ``(..., 3)``: AP, AP50, AP75."""
    return np.stack(
        [precision.mean(axis=(-2, -1)), precision[..., AP50, :].mean(-1), precision[..., AP75, :].mean(-1)], axis=-1
    )


def _bin_name(lo: float, hi: float) -> str:
    return f"[{lo:g}, {hi:g})"


def ap_results(rec: APRecords, n_boot: int = 200, level: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """``{class: {"pooled": cell, "bins": {"[lo, hi)": cell}}}``; a cell holds ``ap``, ``ap50``, ``ap75`` (None
    without ground truth), their bootstrap bounds, ``ground_truth``, ``detections`` (TP + FP at IoU 0.5),
    ``true_positives_50``, ``false_positives_50`` and ``episodes`` (episodes with ground truth or detections)."""
    score = np.asarray(rec.score, dtype=np.float64)
    cls = np.asarray(rec.cls, dtype=np.int64)
    episode = np.asarray(rec.episode, dtype=np.int64)
    tp_bits = np.asarray(rec.tp, dtype=np.int64).reshape(len(score), -1)
    fp_bits = np.asarray(rec.fp, dtype=np.int64).reshape(len(score), -1)
    n_ep = len(rec.episodes)
    gt = np.zeros((len(rec.ranges), len(rec.classes), max(n_ep, 1)), dtype=np.int64)
    for (r, c, e), n in rec.n_gt.items():
        gt[r, c, e] += n
    weights = None
    if n_boot > 0 and n_ep >= 2:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(n_ep, np.full(n_ep, 1.0 / n_ep), size=n_boot).astype(np.float64)  # (B, E)
    out: dict[str, Any] = {}
    for c, name in enumerate(rec.classes):
        sel = cls == c
        cell_of = {}
        for r in range(len(rec.ranges)):
            tp, fp = unpack(tp_bits[sel, r]), unpack(fp_bits[sel, r])
            cell_of[r] = _cell(score[sel], tp, fp, gt[r, c], episode[sel], weights, level, n_ep)
        out[name] = {
            "pooled": cell_of[0],
            "bins": {_bin_name(lo, hi): cell_of[r] for r, (lo, hi) in enumerate(rec.ranges) if r > 0},
            "detections_without_distance": rec.without_distance[c],
        }
    return out


def _cell(
    score: np.ndarray,
    tp: np.ndarray,
    fp: np.ndarray,
    gt_per_episode: np.ndarray,
    episode: np.ndarray,
    weights: np.ndarray | None,
    level: float,
    n_ep: int,
) -> dict[str, Any]:
    n_gt = int(gt_per_episode.sum())
    counted = tp[AP50] | fp[AP50]
    active = set(np.flatnonzero(gt_per_episode).tolist()) | set(episode[(tp | fp).any(axis=0)].tolist())
    cell: dict[str, Any] = {
        "ground_truth": n_gt,
        "detections": int(counted.sum()),
        "true_positives_50": int(tp[AP50].sum()),
        "false_positives_50": int(fp[AP50].sum()),
        "episodes": len(active),
    }
    precision = precision_at_recall_points(score, tp, fp, n_gt)
    values = _summaries(precision) if precision is not None else None
    for i, key in enumerate(NAMES):
        cell[key] = None if values is None else float(values[i])
        cell[f"{key}_lower"] = cell[f"{key}_upper"] = None
    if values is None:
        cell["interval_note"] = "no ground truth: AP undefined"
    elif weights is None:
        cell["interval_note"] = f"no interval: {n_ep} episode(s), need >= 2 to resample"
    else:
        keep = (tp | fp).any(axis=0)  # ignored detections change nothing
        score, tp, fp, episode = score[keep], tp[:, keep], fp[:, keep], episode[keep]
        boot_gt = weights[:, : len(gt_per_episode)] @ gt_per_episode
        step = max(1, 4_000_000 // max(1, tp.shape[1]))  # resamples per chunk: bounded memory
        sums = np.concatenate([
            _summaries(precision_at_recall_points(score, tp, fp, boot_gt[i : i + step], weights[i : i + step], episode))
            for i in range(0, len(weights), step)
        ])  # (B, 3); NaN where a resample drew no ground truth
        ok = ~np.isnan(sums[:, 0])
        tail = 100 * (1 - level) / 2
        for i, key in enumerate(NAMES):
            lo, hi = np.percentile(sums[ok, i], [tail, 100 - tail]) if ok.any() else (np.nan, np.nan)
            cell[f"{key}_lower"], cell[f"{key}_upper"] = float(lo), float(hi)
        cell["interval_note"] = (
            f"{100 * level:g} % percentile bootstrap over {n_ep} episodes ({int(ok.sum())}/{len(ok)} resamples "
            "with ground truth)"
        )
    return cell


__all__ = ["IOU_THRESHOLDS", "NAMES", "ap_results"]
