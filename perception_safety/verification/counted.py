"""The confusion counts behind an observation model: Clopper–Pearson intervals and Dirichlet draws of μ_k.

An outcome's probability is the product over its cells ``(pred, true)`` of the column-normalised counts
(eqs. 6, 8, 9). From the same counts this module gives (issue 13, items 2-3):

- ``intervals(alpha)``: each cell gets the two-sided Clopper–Pearson interval of ``n_pred`` of ``n`` (its
  column's total) at confidence ``1 − alpha/M``, ``M`` = number of cells in the columns the environment uses
  (Bonferroni; = the number of observations in the column for one true object); ``n = 0`` gives ``[0, 1]``;
  an outcome's interval is the product of its cells' intervals (exact for one cell, sound for products);
- ``sample(rng, draws, prior)``: Dirichlet(counts + prior) draws of every used column, per bin, shared by
  all states of a chain (whole-matrix Monte Carlo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.evaluation.confusion.types import column_normalize
from perception_safety.evaluation.intervals import bonferroni, clopper_pearson
from perception_safety.verification.builder import Observation, ObservationModel
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import as_bin_edges, class_cells, outcome_probs, prop_cells


@dataclass(frozen=True, eq=False)
class CountedObservations:
    """``counts[bin, pred, true]`` (one bin when pooled) and ``cells[outcome, factor] = (pred, true)``."""

    outcomes: tuple[Observation, ...]
    cells: np.ndarray
    counts: np.ndarray
    bin_edges: tuple[tuple[float, float], ...] | None = None
    source: str = ""

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.float64)
        if counts.ndim == 2:
            counts = counts[None]
        if counts.ndim != 3 or counts.shape[1] != counts.shape[2] or (counts < 0).any():
            raise VerificationError(f"{self.source}: counts must be non-negative [bin, pred, true], got {counts.shape}")
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "cells", np.asarray(self.cells, dtype=np.int64))

    @classmethod
    def for_class(cls, counts: np.ndarray, labels: Sequence[str], true_env: Sequence[str],
                  bin_edges: Sequence[tuple[float, float]] | None = None,
                  source: str = "class-labeled matrices") -> CountedObservations:
        names, cells = class_cells(labels, true_env, source)
        return cls(names, cells, counts, as_bin_edges(bin_edges), source)

    @classmethod
    def for_prop(cls, counts: np.ndarray, labels: Sequence[str], true_env: str,
                 bin_edges: Sequence[tuple[float, float]] | None = None, empty_label: str = "empty",
                 source: str = "proposition-labeled matrices") -> CountedObservations:
        names, cells = prop_cells(labels, true_env, empty_label, source)
        return cls(names, cells, counts, as_bin_edges(bin_edges), source)

    @property
    def true_columns(self) -> np.ndarray:
        """The distinct true-label columns the outcomes use."""
        return np.unique(self.cells[:, :, 1])

    @property
    def comparisons(self) -> int:
        """``M`` of the Bonferroni correction: cells in the used columns (labels × distinct columns)."""
        return int(self.counts.shape[1] * self.true_columns.size)

    def probabilities(self) -> np.ndarray:
        """Point estimate ``[bin, outcome]`` (column-normalised counts; an empty column gives 0)."""
        return outcome_probs(column_normalize(self.counts), self.cells)

    def intervals(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` per ``[bin, outcome]`` at joint level ``1 − alpha`` per column set (Bonferroni)."""
        n = self.counts.sum(axis=1, keepdims=True)  # [bin, 1, true]
        level = bonferroni(alpha, self.comparisons)
        lo, hi = clopper_pearson(self.counts, np.broadcast_to(n, self.counts.shape), level)
        return outcome_probs(lo, self.cells), outcome_probs(hi, self.cells)

    def model(self, alpha: float | None = None) -> ObservationModel:
        """The `ObservationModel` of the point estimate, with intervals when ``alpha`` is given."""
        lower = upper = None
        if alpha is not None:
            lower, upper = self.intervals(alpha)
        return ObservationModel(self.outcomes, self.probabilities(), self.bin_edges, self.source, lower, upper)

    def sample(self, rng: np.random.Generator, draws: int, prior: float = 0.5) -> np.ndarray:
        """``[draw, bin, outcome]``: μ_k from Dirichlet(counts + prior) draws of each used column.

        One draw is one whole matrix: every state of a chain in the same bin sees the same column.
        """
        if prior <= 0:
            raise VerificationError(f"Dirichlet prior must be > 0, got {prior}")
        cols = self.true_columns
        b, n_labels = self.counts.shape[:2]
        shape = (draws, b, n_labels, cols.size)
        g = rng.standard_gamma(np.broadcast_to(self.counts[:, :, cols] + prior, shape))
        p = np.zeros((draws, b, n_labels, self.counts.shape[2]))
        p[..., cols] = g / g.sum(axis=2, keepdims=True)
        return outcome_probs(p, self.cells)
