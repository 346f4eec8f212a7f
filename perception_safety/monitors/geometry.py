"""Vectorised box-vs-region geometry shared by the plausibility monitor and the stop-region rule."""

from __future__ import annotations

import numpy as np


def intersection_areas(boxes: np.ndarray, region: tuple[float, float, float, float]) -> np.ndarray:
    """Intersection area of each ``(n, 4)`` box ``(x_min, y_min, x_max, y_max)`` with one region."""
    if boxes.shape[0] == 0:
        return np.zeros(0)
    x0, y0, x1, y1 = region
    w = np.minimum(boxes[:, 2], x1) - np.maximum(boxes[:, 0], x0)
    h = np.minimum(boxes[:, 3], y1) - np.maximum(boxes[:, 1], y0)
    return np.clip(w, 0.0, None) * np.clip(h, 0.0, None)


def grow(region: tuple[float, float, float, float], margin: float) -> tuple[float, float, float, float]:
    """The region enlarged by ``margin`` pixels on every side."""
    x0, y0, x1, y1 = region
    return (x0 - margin, y0 - margin, x1 + margin, y1 + margin)


def touches(boxes: np.ndarray, region: tuple[float, float, float, float]) -> np.ndarray:
    """Whether each box intersects the closed region (a shared edge or a degenerate box on it counts)."""
    if boxes.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    x0, y0, x1, y1 = region
    return (boxes[:, 0] <= x1) & (boxes[:, 2] >= x0) & (boxes[:, 1] <= y1) & (boxes[:, 3] >= y0)


def centers(boxes: np.ndarray) -> np.ndarray:
    """``(n, 2)`` box centres."""
    return np.stack([(boxes[:, 0] + boxes[:, 2]) / 2.0, (boxes[:, 1] + boxes[:, 3]) / 2.0], axis=1)
