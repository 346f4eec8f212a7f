"""IoU against hand-computed cases and a brute-force per-pair reference."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import iou_matrix, iou_pairs


def brute_iou(a, b) -> float:
    """Independent scalar IoU, written from the definition."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    w = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    h = max(0.0, min(ay1, by1) - max(ay0, by0))
    inter = w * h
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return inter / union if union > 0 else 0.0


def test_hand_computed_cases():
    a = np.array([[0, 0, 10, 10]], float)
    b = np.array(
        [
            [0, 0, 10, 10],  # identical -> 1
            [5, 0, 15, 10],  # half overlap: 50 / 150
            [10, 10, 20, 20],  # touching corner -> 0
            [2, 2, 4, 4],  # contained: 4 / 100
            [20, 20, 30, 30],  # disjoint -> 0
        ],
        float,
    )
    np.testing.assert_allclose(iou_matrix(a, b)[0], [1.0, 1 / 3, 0.0, 0.04, 0.0])


def test_degenerate_boxes_have_zero_iou():
    a = np.array([[5, 5, 5, 5]], float)
    assert iou_matrix(a, a)[0, 0] == 0.0


def test_matrix_matches_brute_force_on_random_boxes():
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 100, (60, 2))
    wh = rng.uniform(0, 40, (60, 2))
    boxes = np.hstack([xy, xy + wh])
    a, b = boxes[:25], boxes[25:]
    expected = np.array([[brute_iou(p, q) for q in b] for p in a])
    np.testing.assert_allclose(iou_matrix(a, b), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(iou_pairs(a, b[:25]), np.diag(expected[:, :25]), atol=1e-12)


def test_empty_inputs_and_bad_shapes():
    assert iou_matrix(np.zeros((0, 4)), np.zeros((3, 4))).shape == (0, 3)
    with pytest.raises(ValueError, match=r"\(n, 4\)"):
        iou_matrix(np.zeros((2, 3)), np.zeros((1, 4)))
