"""Vectorised intersection-over-union of pixel boxes (no "+1" pixel convention, DESIGN.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _as_boxes(boxes: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected an (n, 4) array of boxes, got shape {arr.shape}")
    return arr


def box_areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of an ``(n, 4)`` box array; degenerate boxes have area 0."""
    b = _as_boxes(boxes, "boxes")
    return np.clip(b[:, 2] - b[:, 0], 0.0, None) * np.clip(b[:, 3] - b[:, 1], 0.0, None)


def _iou(a: np.ndarray, b: np.ndarray, area_a: np.ndarray, area_b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a`` and ``b`` (broadcastable ``(..., 4)`` arrays) given their areas."""
    return iou_of_columns((a[..., 0], a[..., 1], a[..., 2], a[..., 3], area_a),
                          (b[..., 0], b[..., 1], b[..., 2], b[..., 3], area_b))


def iou_of_columns(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], ai: np.ndarray | None = None, bi: np.ndarray | None = None
) -> np.ndarray:
    """IoU of boxes given as columns ``(x_min, y_min, x_max, y_max, area)`` of two broadcastable sets; with indexes,
    of the pairs ``(a[ai[k]], b[bi[k]])``, each column gathered only when used (`confusion.matching`'s candidate
    pairs). A pair whose union is empty has IoU 0. The one IoU arithmetic of the package."""

    def col(cols: Sequence[np.ndarray], idx: np.ndarray | None, j: int) -> np.ndarray:
        return cols[j] if idx is None else cols[j][idx]

    ix = np.minimum(col(a, ai, 2), col(b, bi, 2))
    ix -= np.maximum(col(a, ai, 0), col(b, bi, 0))
    np.clip(ix, 0.0, None, out=ix)
    iy = np.minimum(col(a, ai, 3), col(b, bi, 3))
    iy -= np.maximum(col(a, ai, 1), col(b, bi, 1))
    np.clip(iy, 0.0, None, out=iy)
    inter = np.multiply(ix, iy, out=ix)
    union = col(a, ai, 4) + col(b, bi, 4)
    union -= inter
    out = np.zeros_like(inter)
    np.divide(inter, union, out=out, where=union > 0)
    return out


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU, shape ``(len(a), len(b))``; a pair whose union is empty has IoU 0."""
    a = _as_boxes(a, "a")
    b = _as_boxes(b, "b")
    return _iou(a[:, None, :], b[None, :, :], box_areas(a)[:, None], box_areas(b)[None, :])


def iou_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise IoU of two equally long box arrays (``a[i]`` with ``b[i]``)."""
    a = _as_boxes(a, "a")
    b = _as_boxes(b, "b")
    if len(a) != len(b):
        raise ValueError(f"iou_pairs: {len(a)} boxes against {len(b)}")
    return _iou(a, b, box_areas(a), box_areas(b))
