"""The chain's independence assumption, tested, and a chain with one step of observation memory (issue 24 item 9).

Algorithm 3 draws a fresh, independent observation at every step. Misses come in runs (the same pedestrian,
lit the same way, is missed for several frames), and consecutive misses near the crosswalk are what cause
collisions, so the memoryless chain can be optimistic at any interval width. From the consecutive observation
pairs of each episode (`ObservationRuns`; a pair is counted in the bin of its second frame):

- `independence_tests`: per bin, ``P(miss | miss before)`` against ``P(miss | hit before)`` (a miss = any outcome
  but the column's hit, the diagonal), with the episode as the unit: the difference of the two ratio estimates
  over its cluster-robust (linearised) standard error, against Student's t with ``C − 1`` degrees of freedom;
- `memory_system` / `memory_counts`: the product chain whose state is ``(s, last observation)``: from
  ``(s, y')`` the observation ``y`` is drawn from ``P(y | y', bin(s))`` (the observed transition counts) and the
  car moves to ``(K(s, y), y)``. The first step (``y' = none``) uses the column's marginal counts. Bins of the
  product are ``bin × (outcomes + 1) + y'`` so the builder, the interval chain, the bounds and the posterior
  apply unchanged (Bonferroni then covers every conditional column the chain reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.evaluation.tail_probabilities import student_t_sf
from perception_safety.verification.builder import AbstractSystem, ObservationModel
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError

INDEPENDENT, DEPENDENT, UNTESTABLE, NO_MISSES = "independent", "dependent", "untestable", "no variation"


@dataclass(frozen=True)
class ObservationRuns:
    """``pairs[episode, bin, prev, cur]``: consecutive observations of one true column (indices of the matrix's
    labels), the pair counted in the bin of ``cur``; ``first[episode, bin, cur]``: observations without a
    predecessor in their episode."""

    pairs: np.ndarray
    first: np.ndarray

    @classmethod
    def from_sequences(cls, sequences: Sequence[tuple[Sequence[int], Sequence[int]]], n_bins: int,
                       n_labels: int) -> ObservationRuns:
        """``sequences``: per episode ``(bins, labels)`` of its frames in time order (bin -1: out of range, which
        also breaks the run)."""
        pairs = np.zeros((len(sequences), n_bins, n_labels, n_labels))
        first = np.zeros((len(sequences), n_bins, n_labels))
        for e, (bins, labels) in enumerate(sequences):
            b, y = np.asarray(bins, dtype=np.int64), np.asarray(labels, dtype=np.int64)
            if b.shape != y.shape or (y < 0).any() or (y >= n_labels).any() or (b >= n_bins).any():
                raise VerificationError(f"episode {e}: bins and labels must be equal-length index arrays")
            ok = b >= 0
            linked = np.zeros(b.shape, dtype=bool)
            linked[1:] = ok[1:] & ok[:-1]
            np.add.at(pairs[e], (b[linked], y[np.flatnonzero(linked) - 1], y[linked]), 1)
            np.add.at(first[e], (b[ok & ~linked], y[ok & ~linked]), 1)
        return cls(pairs, first)

    def marginal(self) -> np.ndarray:
        """``[episode, bin, cur]``: every observation (with or without a predecessor)."""
        return self.pairs.sum(axis=2) + self.first


@dataclass(frozen=True)
class RunTest:
    """One bin's test: ``P(miss)``, ``P(miss | miss before)``, ``P(miss | hit before)``, episodes, pairs, the
    t statistic and its two-sided p-value, and the verdict (``independent``, ``dependent``, ``untestable``: too
    few episodes or pairs to tell, ``no variation``: never or always missed)."""

    bin: int
    p_miss: float | None
    p_miss_after_miss: float | None
    p_miss_after_hit: float | None
    episodes: int
    pairs: int
    statistic: float | None
    p_value: float | None
    verdict: str


def independence_tests(runs: ObservationRuns, hit: int, alpha: float = 0.05) -> list[RunTest]:
    """Per bin: is a miss more (or less) likely right after a miss? Episodes as the unit (module docstring)."""
    pairs = runs.pairs
    miss_prev = np.delete(pairs, hit, axis=2).sum(axis=2)  # [e, bin, cur]
    hit_prev = pairs[:, :, hit, :]
    a = miss_prev.sum(axis=2) - miss_prev[:, :, hit]  # miss -> miss
    b = miss_prev.sum(axis=2)  # miss -> any
    c = hit_prev.sum(axis=2) - hit_prev[:, :, hit]  # hit -> miss
    d = hit_prev.sum(axis=2)
    out = []
    for k in range(pairs.shape[1]):
        used = (b[:, k] + d[:, k]) > 0
        n_e, n_pairs = int(used.sum()), int((b[:, k] + d[:, k]).sum())
        bb, dd = b[:, k].sum(), d[:, k].sum()
        p = (a[:, k].sum() + c[:, k].sum()) / n_pairs if n_pairs else None
        p1 = a[:, k].sum() / bb if bb else None
        p0 = c[:, k].sum() / dd if dd else None
        stat = pv = None
        if p is None or n_e < 2 or p1 is None or p0 is None:
            verdict = NO_MISSES if p in (0.0, 1.0) else UNTESTABLE
        else:
            u = (a[used, k] - p1 * b[used, k]) / bb - (c[used, k] - p0 * d[used, k]) / dd
            se = float(np.sqrt(n_e / (n_e - 1) * (u ** 2).sum()))
            if se > 0:
                stat = float((p1 - p0) / se)
                pv = 2 * student_t_sf(abs(stat), n_e - 1)
                verdict = DEPENDENT if pv < alpha else INDEPENDENT
            else:
                verdict = DEPENDENT if p1 != p0 else INDEPENDENT
        out.append(RunTest(k, p, p1, p0, n_e, n_pairs, stat, pv, verdict))
    return out


def memory_counts(counted: CountedObservations, runs: ObservationRuns,
                  true: int) -> tuple[CountedObservations, list[tuple[int, str]]]:
    """The product's counts: row ``bin × (L + 1) + prev`` holds ``n(cur | prev, bin)`` in column ``true``; the
    last row of each bin (``prev = none``) the column's marginal counts. A conditional column without a pair
    takes the marginal counts (returned as ``(bin, warning)``). Per-episode counts are kept (clusters)."""
    n_bins, n_labels = counted.counts.shape[:2]
    if counted.cells.shape[1] != 1 or np.any(counted.cells[:, 0, 1] != true):
        raise VerificationError(f"{counted.source}: observation memory needs a one-column environment")
    if runs.pairs.shape[1:] != (n_bins, n_labels, n_labels):
        raise VerificationError(f"runs {runs.pairs.shape[1:]} do not match the matrices ({n_bins} bins, "
                                f"{n_labels} labels)")
    rows = n_labels + 1
    per_ep = np.zeros((runs.pairs.shape[0], n_bins * rows, n_labels, n_labels))
    marg = runs.marginal()
    warnings: list[tuple[int, str]] = []
    for k in range(n_bins):
        for prev in range(rows):
            src = marg[:, k] if prev == n_labels else runs.pairs[:, k, prev]
            if prev < n_labels and src.sum() == 0 and runs.pairs[:, :, prev].sum() > 0:
                name = "/".join(counted.outcomes[prev]) or "∅"
                warnings.append((k, f"bin {k}: no observation followed '{name}' there; the marginal is used after it"))
            per_ep[:, k * rows + prev, :, true] = src if src.sum() > 0 else marg[:, k]
    edges = tuple((float(j), float(j + 1)) for j in range(n_bins * rows))
    model = CountedObservations(counted.outcomes, counted.cells, per_ep.sum(axis=0), edges,
                                f"{counted.source} with one step of observation memory",
                                per_ep if counted.clusters is not None else None)
    return model, warnings


def memory_system(system: AbstractSystem, base: ObservationModel) -> AbstractSystem:
    """The product system ``(s, last observation)`` over ``base``'s outcomes; its distance selects the product
    bin ``bin(s) × (L + 1) + prev`` (`memory_counts`); initial states start with ``prev = none``."""
    n, m = int(system.n_states), len(base.outcomes)
    rows = m + 1
    index = {o: j for j, o in enumerate(base.outcomes)}
    states = np.arange(n, dtype=np.int64)
    bins = base.bins_of(np.asarray(system.distance_m(states), dtype=np.float64))

    def controller(s: np.ndarray, y: tuple[str, ...]) -> np.ndarray:
        return np.asarray(system.controller(s // rows, y), dtype=np.int64) * rows + index[tuple(y)]

    def distance(s: np.ndarray) -> np.ndarray:
        b = bins[s // rows]
        return np.where(b >= 0, b * rows + s % rows + 0.5, -1.0)

    def describe(s: int) -> str:
        prev = "none" if s % rows == m else "/".join(base.outcomes[s % rows]) or "∅"
        return f"{system.describe(s // rows)} after {prev}"

    return AbstractSystem(
        n_states=n * rows, controller=controller, distance_m=distance,
        labels={k: np.repeat(np.asarray(v, dtype=bool), rows) for k, v in system.labels.items()},
        initial_states=[int(s) * rows + m for s in system.initial_states], describe=describe,
    )


MEMORY, INCONCLUSIVE = "memory", "inconclusive"


@dataclass(frozen=True)
class Assessment:
    """Which chain P(φ) may come from: ``independent`` (the memoryless chain), ``memory`` (some decision bin
    shows runs: use the chain with observation memory) or ``inconclusive`` (a decision bin cannot be tested,
    or the memory chain would read a conditional column without data) — never a silent number."""

    status: str
    tests: tuple[RunTest, ...]
    decision_bins: tuple[int, ...]
    warnings: tuple[str, ...]


def assess(runs: ObservationRuns, counted: CountedObservations, hit: int, bins: Sequence[int],
           alpha: float = 0.05) -> Assessment:
    """Test every decision bin (``bins``: `interval_chain.decision_bins` of the memoryless chain)."""
    tests = independence_tests(runs, hit, alpha)
    used = [tests[b] for b in sorted({int(b) for b in bins})]
    warnings = [f"bin {t.bin}: the independence of consecutive observations cannot be tested ({t.episodes} "
                f"episode(s), {t.pairs} pairs)" for t in used if t.verdict == UNTESTABLE]
    status = INDEPENDENT
    if any(t.verdict == DEPENDENT for t in used):
        status = MEMORY
        warnings += [f"bin {t.bin}: P(miss | miss before) = {t.p_miss_after_miss:.3g} vs P(miss | hit before) = "
                     f"{t.p_miss_after_hit:.3g} ({_p_text(t)}, {t.episodes} episodes): misses come in runs; "
                     "P(phi) from the chain with one step of observation memory" for t in used
                     if t.verdict == DEPENDENT]
        _, empty = memory_counts(counted, runs, int(counted.cells[0, 0, 1]))
        gaps = [w for k, w in empty if k in {t.bin for t in used}]
        if gaps:
            status, warnings = INCONCLUSIVE, warnings + gaps
    if any(t.verdict == UNTESTABLE for t in used):
        status = INCONCLUSIVE
    return Assessment(status, tuple(tests), tuple(t.bin for t in used), tuple(warnings))


def _p_text(t: RunTest) -> str:
    """The test's p-value, or why it has none (every episode shows the same difference: no spread to test)."""
    return f"p = {t.p_value:.2g}" if t.p_value is not None else "the same in every episode"
