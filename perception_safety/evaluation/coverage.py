"""Synthetic clustered data of known truth and the coverage of an interval method on it (issue 24 item 3).

`beta_binomial_clusters` draws, per trial, ``k`` clusters of ``m`` frames whose success probabilities are
``Beta(p(1-ρ)/ρ, (1-p)(1-ρ)/ρ)``: every frame succeeds with probability ``p`` and two frames of one cluster
are correlated with intra-cluster correlation ``ρ`` (``ρ = 0``: independent frames). `coverage` counts how
often an interval method's ``[lower, upper]`` holds ``p``. Shared by the tests and benchmarks/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

IntervalMethod = Callable[[np.ndarray, np.ndarray], tuple[float | None, float | None]]
"""Per-cluster (successes, trials) -> (lower, upper)."""


def beta_binomial_clusters(
    rng: np.random.Generator, trials: int, clusters: int, frames: int, p: float, icc: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(successes, frames)`` of shape ``(trials, clusters)`` with mean ``p`` and intra-cluster correlation ``icc``."""
    if not 0.0 < p < 1.0 or not 0.0 <= icc < 1.0:
        raise ValueError(f"need 0 < p < 1 and 0 <= icc < 1, got p = {p}, icc = {icc}")
    if icc == 0:
        probs = np.full((trials, clusters), p)
    else:
        scale = (1 - icc) / icc
        probs = rng.beta(p * scale, (1 - p) * scale, size=(trials, clusters))
    m = np.full((trials, clusters), frames, dtype=np.int64)
    return rng.binomial(m, probs), m


@dataclass(frozen=True)
class Coverage:
    """How often ``[lower, upper]`` held the truth, and the Monte-Carlo standard error of that rate."""

    covered: float
    lower_above: float
    """Fraction with the lower bound above the truth (the side that lets a requirement pass falsely)."""
    upper_below: float
    trials: int
    median_width: float

    @property
    def mc_se(self) -> float:
        return float(np.sqrt(max(self.covered * (1 - self.covered), 1e-12) / self.trials))


def coverage(method: IntervalMethod, successes: np.ndarray, frames: np.ndarray, truth: float) -> Coverage:
    """Coverage of ``method`` over the rows of per-cluster counts (one row = one simulated data set)."""
    bounds = np.array(
        [[np.nan if b is None else b for b in method(y, m)] for y, m in zip(successes, frames, strict=True)]
    )
    lo, hi = bounds[:, 0], bounds[:, 1]
    ok = (lo <= truth) & (truth <= hi)
    return Coverage(
        covered=float(ok.mean()),
        lower_above=float((lo > truth).mean()),
        upper_below=float((hi < truth).mean()),
        trials=len(bounds),
        median_width=float(np.median(hi - lo)),
    )
