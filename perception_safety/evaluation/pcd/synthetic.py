"""Synthetic PCD data with a known answer: a logistic detection curve times Gaussian scores (docs/pcd.md).

A target at distance ``x`` is detected with probability ``p(x) = 1 / (1 + exp((x - x50) / scale))``; a detected
target scores ``y ~ N(mu, sd)``, a missed one ``y = 0``. Then ``P(y > y_t | x) = p(x) Phi((mu - y_t) / sd)`` for
``y_t >= 0`` and ``PCD(y_t, p_t)`` is where that equals ``p_t``:
``x50 + scale log(c / p_t - 1)`` with ``c = Phi((mu - y_t) / sd)`` (0 m when ``c <= p_t`` or the root lies
below the first distance; capped at the last). Samples come in tracks (approach runs) so the bootstrap has
whole units to resample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr


@dataclass(frozen=True)
class HurdleTruth:
    """Parameters of the known-answer model."""

    x50: float = 120.0
    scale: float = 10.0
    mu: float = 0.75
    sd: float = 0.05
    x_min: float = 5.0
    x_max: float = 200.0

    def p_det(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp((np.asarray(x, dtype=float) - self.x50) / self.scale))

    def pcd(self, y_t: float, p_t: float) -> float:
        """The analytic PCD (largest distance in [x_min, x_max] with P(y > y_t | x) > p_t, 0 m when none)."""
        c = float(ndtr((self.mu - y_t) / self.sd)) if y_t >= 0 else 1.0
        if c <= p_t:
            return 0.0
        root = self.x50 + self.scale * np.log(c / p_t - 1.0) if p_t > 0 else np.inf
        if root < self.x_min:
            return 0.0
        return float(min(root, self.x_max))

    def grid(self, y_ts: tuple[float, ...], p_ts: tuple[float, ...]) -> np.ndarray:
        return np.array([[self.pcd(a, b) for b in p_ts] for a in y_ts])


def hurdle_samples(
    n: int = 2000, seed: int = 0, truth: HurdleTruth | None = None, tracks: int = 40
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, track)``: ``n`` samples in ``tracks`` approach runs at uniform distances in [x_min, x_max]."""
    t = truth or HurdleTruth()
    rng = np.random.default_rng(seed)
    x = rng.uniform(t.x_min, t.x_max, n)
    track = rng.integers(0, tracks, n)
    hit = rng.uniform(size=n) < t.p_det(x)
    y = np.where(hit, rng.normal(t.mu, t.sd, n), 0.0)
    return x, np.clip(y, 0.0, 1.0), track
