"""The confusion counts behind an observation model: Clopper–Pearson intervals and Dirichlet draws of μ_k.

An outcome's probability is the product over its cells ``(pred, true)`` of the column-normalised counts
(eqs. 6, 8, 9). From the same counts this module gives (issue 13, items 2-3):

- ``intervals(alpha, bins)``: each cell gets the two-sided Clopper–Pearson interval of ``n_pred`` of ``n`` (its
  column's total) at confidence ``1 − alpha/M``, ``M`` = cells in the columns the environment uses × the bins
  the chain decides in (Bonferroni over every interval the chain reads, so all hold jointly at ``1 − alpha``:
  the stated level is the true one, issue 24 item 7); ``n = 0`` gives ``[0, 1]``; an outcome's interval is
  the product of its cells' intervals (exact for one cell, sound for products);
- with per-cluster counts (``clusters[c, bin, pred, true]``, the episode or track as unit, issue 24 item 1)
  each cell's interval is the Korn–Graubard one of `evaluation.clustered` (the confusion analysis quotes the
  same): Clopper–Pearson on the cell's effective counts (its design effect from the clusters, shrunk by
  ``(z / t_{C−1})²``); one cluster gives ``[0, 1]``. Without clusters the plain counts are used, exactly as
  before;
- ``sample(rng, draws, prior)``: Dirichlet(counts + prior) draws of every used column, per bin, shared by
  all states of a chain (whole-matrix Monte Carlo; with clusters each column's counts over its design effect,
  the largest of its cells').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from perception_safety.evaluation.clustered import (
    clustered_proportion,
    degrees_of_freedom_factor,
    design_effect,
    effective_counts,
)
from perception_safety.evaluation.confusion.types import column_normalize
from perception_safety.evaluation.intervals import bonferroni, clopper_pearson
from perception_safety.verification.builder import Observation, ObservationModel
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import as_bin_edges, class_cells, outcome_probs, prop_cells


@lru_cache(maxsize=1024)
def _effective_n(successes: bytes, trials: bytes) -> float:
    """`clustered_proportion`'s effective sample size of one column's hits, kept by the per-cluster counts: the sweep's
    environments share columns (the ``obs`` column of ``{ped, obs}`` is the ``obs`` environment's) and variants."""
    return clustered_proportion(np.frombuffer(successes), np.frombuffer(trials)).effective_n


@dataclass(frozen=True)
class ColumnDesign:
    """Per ``[bin, true]`` column: design effect (≥ 1), clusters with frames in it, frames."""

    deff: np.ndarray
    clusters: np.ndarray
    frames: np.ndarray


@dataclass(frozen=True, eq=False)
class CountedObservations:
    """``counts[bin, pred, true]`` (one bin when pooled) and ``cells[outcome, factor] = (pred, true)``;
    ``clusters[c, bin, pred, true]`` (optional) splits the counts by episode/track and must sum to them."""

    outcomes: tuple[Observation, ...]
    cells: np.ndarray
    counts: np.ndarray
    bin_edges: tuple[tuple[float, float], ...] | None = None
    source: str = ""
    clusters: np.ndarray | None = None

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.float64)
        if counts.ndim == 2:
            counts = counts[None]
        if counts.ndim != 3 or counts.shape[1] != counts.shape[2] or (counts < 0).any():
            raise VerificationError(f"{self.source}: counts must be non-negative [bin, pred, true], got {counts.shape}")
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "cells", np.asarray(self.cells, dtype=np.int64))
        if self.clusters is not None:
            cl = np.asarray(self.clusters, dtype=np.float64)
            if cl.ndim == 3:
                cl = cl[:, None]
            if cl.shape[1:] != counts.shape or (cl < 0).any() or not np.allclose(cl.sum(axis=0), counts):
                raise VerificationError(f"{self.source}: per-cluster counts {cl.shape} must be non-negative "
                                        f"[cluster, bin, pred, true] summing to the counts {counts.shape}")
            object.__setattr__(self, "clusters", cl)

    @classmethod
    def for_class(cls, counts: np.ndarray, labels: Sequence[str], true_env: Sequence[str],
                  bin_edges: Sequence[tuple[float, float]] | None = None,
                  source: str = "class-labeled matrices", clusters: np.ndarray | None = None) -> CountedObservations:
        names, cells = class_cells(labels, true_env, source)
        return cls(names, cells, counts, as_bin_edges(bin_edges), source, clusters)

    @classmethod
    def for_prop(cls, counts: np.ndarray, labels: Sequence[str], true_env: str,
                 bin_edges: Sequence[tuple[float, float]] | None = None, empty_label: str = "empty",
                 source: str = "proposition-labeled matrices",
                 clusters: np.ndarray | None = None) -> CountedObservations:
        names, cells = prop_cells(labels, true_env, empty_label, source)
        return cls(names, cells, counts, as_bin_edges(bin_edges), source, clusters)

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

    def _per_cell(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-cluster ``(successes, trials)`` of every cell, ``[c, bin, pred, true]`` each."""
        assert self.clusters is not None
        return self.clusters, np.broadcast_to(self.clusters.sum(axis=2, keepdims=True), self.clusters.shape)

    def design(self) -> ColumnDesign | None:
        """Design effect, clusters and frames per ``[bin, true]`` column; ``None`` without cluster counts
        (computed once per object: the sweep reads it for every max speed, the bounds and the posterior).

        A column's design effect is the largest of its cells', and at least ``1 + (m_w − 1) ρ`` with ``ρ`` the
        frame-weighted ICC of the same true label over the bins where it could be estimated (a bin whose
        frames all fall in one cell has no variation to estimate it from; the detector's episodes are the
        same there) and ``m_w = Σ m² / Σ m`` the bin's size-weighted cluster size.
        """
        return self._design

    @cached_property
    def _design(self) -> ColumnDesign | None:
        if self.clusters is None:
            return None
        succ, trials = self._per_cell()
        deff, icc, k = design_effect(succ, trials, axis=0)
        frames = self.counts.sum(axis=1)  # [bin, true]
        n_c = self.clusters.sum(axis=2)  # [c, bin, true]
        varied = (deff > 1.0) | ((self.counts > 0) & (self.counts < frames[:, None, :]) & (k > 1))
        w = np.where(varied, self.counts, 0.0)
        rho = np.divide((w * icc).sum(axis=(0, 1)), w.sum(axis=(0, 1)), out=np.zeros(w.shape[2]),
                        where=w.sum(axis=(0, 1)) > 0)  # [true]
        m_w = np.divide((n_c ** 2).sum(axis=0), frames, out=np.ones(frames.shape), where=frames > 0)
        pooled = 1.0 + (m_w - 1.0) * rho[None, :]
        clusters = k.max(axis=1)
        hits = np.maximum(deff.max(axis=1), np.maximum(pooled, self._hit_design(n_c, clusters)))
        for a in (hits, clusters, frames):
            a.flags.writeable = False  # shared by every caller of `design`
        return ColumnDesign(deff=hits, clusters=clusters, frames=frames)

    def _hit_design(self, n_c: np.ndarray, clusters: np.ndarray) -> np.ndarray:
        """Per used ``[bin, true]`` column: the design effect implied by the cluster-aware interval of its hit rate
        (`evaluation.clustered.clustered_proportion`, whose profile likelihood sees what the spread between episodes
        cannot: a good detector whose rare bad episodes the sample lacks), net of the ``(z/t)²`` factor that
        `sample` applies itself; 1 elsewhere."""
        out = np.ones(n_c.shape[1:])
        assert self.clusters is not None
        factor = degrees_of_freedom_factor(clusters, 0.05)
        for b in range(n_c.shape[1]):
            for t in self.true_columns.tolist():
                trials = n_c[:, b, t]
                if (trials > 0).sum() < 2:
                    continue
                n_eff = _effective_n(np.ascontiguousarray(self.clusters[:, b, t, t]).tobytes(),
                                     np.ascontiguousarray(trials).tobytes())
                if n_eff > 0:
                    out[b, t] = trials.sum() * factor[b, t] / n_eff
        return out

    def n_bins_used(self, bins: Sequence[int] | np.ndarray | None) -> int:
        """How many bins the Bonferroni split covers: ``bins`` (those the chain decides in), default all."""
        return self.counts.shape[0] if bins is None else max(1, int(np.unique(np.asarray(bins)).size))

    def per_interval_alpha(self, alpha: float, bins: Sequence[int] | np.ndarray | None = None) -> float:
        """``alpha / M``, ``M`` = cells of the used columns × bins used: every interval the chain reads."""
        return bonferroni(alpha, self.comparisons * self.n_bins_used(bins))

    def effective_counts(self) -> np.ndarray:
        """``[bin, pred, true]``: counts over each column's design effect; the counts themselves without
        cluster information."""
        d = self.design()
        return self.counts if d is None else self.counts / d.deff[:, None, :]

    def intervals(self, alpha: float, bins: Sequence[int] | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` per ``[bin, outcome]``, all holding jointly at ``1 − alpha`` over the used
        columns and the bins ``bins`` (default: every bin) — Bonferroni over cells × columns × bins."""
        level = self.per_interval_alpha(alpha, bins)
        if self.clusters is None:
            k, n = self.counts, np.broadcast_to(self.counts.sum(axis=1, keepdims=True), self.counts.shape)
        else:
            k, n, _ = effective_counts(*self._per_cell(), alpha=level, axis=0)
        lo, hi = clopper_pearson(np.minimum(k, n), n, level)
        return outcome_probs(lo, self.cells), outcome_probs(hi, self.cells)

    def model(self, alpha: float | None = None, bins: Sequence[int] | np.ndarray | None = None) -> ObservationModel:
        """The `ObservationModel` of the point estimate, with intervals when ``alpha`` is given."""
        lower = upper = None
        if alpha is not None:
            lower, upper = self.intervals(alpha, bins)
        return ObservationModel(self.outcomes, self.probabilities(), self.bin_edges, self.source, lower, upper)

    def sample(self, rng: np.random.Generator, draws: int, prior: float = 0.5, method: str = "split",
               level: float | None = None) -> np.ndarray:
        """``[draw, bin, outcome]``: μ_k from posterior draws of each used column.

        One draw is one whole matrix: every state of a chain in the same bin sees the same column.
        ``dirichlet``: Dirichlet(counts + prior). ``split``: the column's hit (the diagonal cell) from
        Beta(hit + prior, rest + prior), the rest split by Dirichlet(rest counts + prior). With clusters the
        counts are the effective ones (× the Korn–Graubard factor at ``1 − level`` when ``level`` is given).
        """
        if prior <= 0:
            raise VerificationError(f"Dirichlet prior must be > 0, got {prior}")
        cols = self.true_columns
        b, n_labels = self.counts.shape[:2]
        shape = (draws, b, n_labels, cols.size)
        eff = self.effective_counts()
        d = self.design()
        if d is not None and level is not None:
            eff = eff * degrees_of_freedom_factor(d.clusters, 1 - level)[:, None, :]
        g = rng.standard_gamma(np.broadcast_to(eff[:, :, cols] + prior, shape))
        p = np.zeros((draws, b, n_labels, self.counts.shape[2]))
        p[..., cols] = g / g.sum(axis=2, keepdims=True)
        if method == "split":
            diag = np.zeros((n_labels, cols.size), dtype=bool)
            diag[cols, np.arange(cols.size)] = True
            k = eff[:, cols, cols]  # [bin, col]
            rest = eff[:, :, cols].sum(axis=1) - k
            h1 = rng.standard_gamma(np.broadcast_to(k + prior, (draws, b, cols.size)))
            h2 = rng.standard_gamma(np.broadcast_to(rest + prior, (draws, b, cols.size)))
            hit = h1 / (h1 + h2)
            others = np.where(diag, 0.0, g)
            others = others / others.sum(axis=2, keepdims=True)
            p[..., cols] = np.where(diag, hit[:, :, None, :], (1 - hit)[:, :, None, :] * others)
        return outcome_probs(p, self.cells)
