"""Interpolated precision from the ranks where recall rises equals the textbook computation over every rank.

The reference below is the COCO accumulation written out per row (cumulative TP/FP over all ranks, the envelope
from the right, the first rank reaching each recall point); the package evaluates only the true-positive ranks
and searches all rows at once, and must give the same numbers bit for bit, weighted (bootstrap) or not.
"""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.detection_ap.matching import RECALL_POINTS
from perception_safety.evaluation.detection_ap.precision import EPS, precision_at_recall_points


def _reference(scores, tp, fp, n_gt, w):
    order = np.argsort(-scores, kind="mergesort")
    out = np.zeros((len(w), tp.shape[0], len(RECALL_POINTS)))
    for b in range(len(w)):
        for t in range(tp.shape[0]):
            tps = np.cumsum(tp[t, order] * w[b, order])
            fps = np.cumsum(fp[t, order] * w[b, order])
            if n_gt[b] <= 0:
                out[b, t] = np.nan
                continue
            recall, precision = tps / n_gt[b], tps / (tps + fps + EPS)
            env = np.maximum.accumulate(precision[::-1])[::-1]
            for k, r in enumerate(RECALL_POINTS):
                i = np.searchsorted(recall, r, side="left")
                out[b, t, k] = env[i] if i < len(recall) else 0.0
    return out


def _case(seed: int, n: int = 300, t: int = 4, episodes: int = 5, resamples: int = 9):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(n), 2)  # many ties: input order must break them
    kind = rng.choice(3, size=(t, n), p=[0.45, 0.45, 0.10])  # TP, FP, neither (matched to ignored ground truth)
    tp, fp = kind == 0, kind == 1
    episode = rng.integers(0, episodes, n)
    gt_per_episode = np.bincount(episode[tp[0]], minlength=episodes) + rng.integers(0, 4, episodes)
    weights = rng.multinomial(episodes, np.full(episodes, 1 / episodes), size=resamples).astype(float)
    weights[0, :] = 0.0
    weights[0, 1] = 2.0  # one resample of a single episode, one with no ground truth at all
    gt_per_episode[1] = 0
    weights[1] = 0.0
    weights[1, 1] = episodes
    return scores, tp, fp, episode, gt_per_episode, weights


def test_weighted_precision_equals_the_reference_bit_for_bit() -> None:
    for seed in range(6):
        scores, tp, fp, episode, gt, weights = _case(seed)
        n_gt = weights @ gt
        got = precision_at_recall_points(scores, tp, fp, n_gt, weights, episode)
        want = _reference(scores, tp, fp, n_gt, weights[:, episode])
        assert np.array_equal(got, want, equal_nan=True)
        per_rank = precision_at_recall_points(scores, tp, fp, n_gt, weights[:, episode])
        assert np.array_equal(per_rank, want, equal_nan=True)


def test_runs_of_copies_all_hits_all_misses_and_one_unit_equal_the_reference() -> None:
    """The package reads precision at the end of each run of true positives and sums a run's weight per distinct
    (run, unit) pair: detections copied 16 times (the benchmark's input: each copy adjacent after the stable sort,
    same episode), all true positives, all false positives, NaN scores, a single drawn episode, a resample of a unit
    without detections must all give the per-rank reference's numbers."""
    for seed in range(4):
        scores, tp, fp, episode, gt, weights = _case(seed, n=60)
        rep = 16
        copies = (np.repeat(scores, rep), np.repeat(tp, rep, axis=1), np.repeat(fp, rep, axis=1),
                  np.repeat(episode, rep))  # fmt: skip
        n_gt = weights @ (gt * rep)
        got = precision_at_recall_points(*copies[:3], n_gt, weights, copies[3])
        assert np.array_equal(got, _reference(*copies[:3], n_gt, weights[:, copies[3]]), equal_nan=True)
        hits, misses = np.ones_like(tp), np.zeros_like(tp)
        for flags in ((hits, misses), (misses, hits), (tp & (np.arange(len(scores)) < 30), fp)):
            n_gt = weights @ (gt + np.bincount(episode, minlength=len(gt)))
            got = precision_at_recall_points(scores, *flags, n_gt, weights, episode)
            assert np.array_equal(got, _reference(scores, *flags, n_gt, weights[:, episode]), equal_nan=True)
        nan_scores = np.where(np.arange(len(scores)) % 7 == 0, np.nan, scores)  # ranked last, in input order
        n_gt = weights @ gt
        got = precision_at_recall_points(nan_scores, tp, fp, n_gt, weights, episode)
        assert np.array_equal(got, _reference(nan_scores, tp, fp, n_gt, weights[:, episode]), equal_nan=True)
        one = np.zeros((3, weights.shape[1]))
        one[:, 2] = [1.0, 3.0, 5.0]  # every resample draws episode 2 only
        n_gt = one @ gt
        got = precision_at_recall_points(scores, tp, fp, n_gt, one, episode)
        assert np.array_equal(got, _reference(scores, tp, fp, n_gt, one[:, episode]), equal_nan=True)


def test_unweighted_precision_equals_the_reference_bit_for_bit() -> None:
    for seed in range(6):
        scores, tp, fp, _, gt, _ = _case(seed, n=120, t=10)
        n = float(gt.sum())
        got = precision_at_recall_points(scores, tp, fp, n)
        assert np.array_equal(got, _reference(scores, tp, fp, np.array([n]), np.ones((1, len(scores))))[0])


def test_edge_cases_no_true_positive_no_detection_no_ground_truth() -> None:
    none = np.zeros((2, 3), bool)
    assert np.array_equal(precision_at_recall_points(np.ones(3), none, ~none, 4.0), np.zeros((2, 101)))
    assert np.array_equal(precision_at_recall_points(np.ones(0), none[:, :0], none[:, :0], 4.0), np.zeros((2, 101)))
    assert precision_at_recall_points(np.ones(3), ~none, none, 0.0) is None
    # one true positive of one object: precision 1 (COCO's 1 / (1 + eps)) at every recall point
    assert np.array_equal(precision_at_recall_points(np.ones(1), np.ones((1, 1), bool), np.zeros((1, 1), bool), 1.0),
                          np.full((1, 101), 1 / (1 + EPS)))  # fmt: skip


def test_huge_counts_take_the_float_path_and_fractional_weights_are_refused() -> None:
    """Draw counts run on exact int32 sums (the tests above); counts whose sums could overflow int32 keep float64
    sums, against the same reference. Weights that are not whole counts are refused: the first rank reaching a
    recall point is found by integer counts, and such weights gave wrong precision (0.48 off in this case)."""
    import pytest

    scores, tp, fp, episode, gt, weights = _case(7)
    w = weights * 2.0**30
    n_gt = w @ gt
    got = precision_at_recall_points(scores, tp, fp, n_gt, w, episode)
    assert np.array_equal(got, _reference(scores, tp, fp, n_gt, w[:, episode]), equal_nan=True)
    for bad in (weights * 0.5 + 0.25, -weights, weights * np.nan):
        with pytest.raises(ValueError, match="whole non-negative counts"):
            precision_at_recall_points(scores, tp, fp, bad @ gt, bad, episode)
