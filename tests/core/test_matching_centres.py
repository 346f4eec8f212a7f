"""Matching by centre distance (3D object lists): optimal one-to-one by summed weight 1 - d / max_distance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from perception_safety.core.matching import centre_weights, match_centres


def boxes_at(xy: np.ndarray, half: float = 0.3) -> np.ndarray:
    return np.column_stack([xy[:, 0] - half, xy[:, 1] - half, xy[:, 0] + half, xy[:, 1] + half])


def brute_force(det: np.ndarray, gt: np.ndarray, t: float) -> float:
    """Best summed weight over every one-to-one assignment (independent of the solver)."""
    d = np.hypot(det[:, None, 0] - gt[None, :, 0], det[:, None, 1] - gt[None, :, 1])
    w = np.where(d <= t, np.maximum(1 - d / t, 1e-12), 0.0)
    best = 0.0
    n, m = w.shape
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.permutations(range(m), k):
                if all(w[r, c] > 0 for r, c in zip(rows, cols, strict=True)):
                    best = max(best, sum(w[r, c] for r, c in zip(rows, cols, strict=True)))
    return best


def test_match_centres_is_optimal_on_random_scenes():
    rng = np.random.default_rng(3)
    for _ in range(60):
        det = rng.uniform(0, 6, (rng.integers(0, 5), 2))
        gt = rng.uniform(0, 6, (rng.integers(0, 5), 2))
        m = match_centres(boxes_at(det), boxes_at(gt), 2.0)
        assert float(np.sum(m.ious)) == pytest.approx(brute_force(det, gt, 2.0), abs=1e-9)
        d = np.hypot(*(det[m.det_indices] - gt[m.gt_indices]).T) if len(m.det_indices) else np.zeros(0)
        assert np.all(d <= 2.0)


def test_threshold_is_inclusive_and_classes_respected():
    det = boxes_at(np.array([[2.0, 0.0], [0.0, 5.0]]))
    gt = boxes_at(np.array([[0.0, 0.0], [0.0, 5.5]]))
    m = match_centres(det, gt, 2.0)
    assert sorted(zip(m.det_indices.tolist(), m.gt_indices.tolist(), strict=True)) == [(0, 0), (1, 1)]
    m = match_centres(det, gt, 2.0, ["car", "ped"], ["ped", "ped"], class_aware=True)
    assert m.det_indices.tolist() == [1] and m.gt_indices.tolist() == [1]
    assert centre_weights(np.array([0.0, 1.0, 2.0, 2.1]), 2.0).tolist() == [1.0, 0.5, 1e-12, 0.0]
    with pytest.raises(ValueError, match="positive"):
        match_centres(det, gt, 0.0)
