"""The interval DTMC of Algorithm 3: each transition gets the sum of its observations' intervals (issue 13).

``[Pr_lo(s, s'), Pr_hi(s, s')] = [Σ_{y ∈ O(s,s')} lo_k(y), min(1, Σ_{y ∈ O(s,s')} hi_k(y))]`` with the same
``O(s, s')`` (controller successors) and bin ``k`` as the point chain. Controller-agnostic: any
`AbstractSystem` whose `ObservationModel` carries ``lower``/``upper`` gets an interval chain. Handed to Storm
as ``SparseDtmc[Interval]`` (an IDTMC) through ``SparseMatrixBuilder[Interval]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.verification.builder import (
    ROW_SUM_TOLERANCE,
    AbstractSystem,
    ObservationModel,
    _readonly,
    check_labels,
    csr_indptr,
    initial_states,
    last_of_run,
    merge_successors,
    successor_table,
)
from perception_safety.verification.errors import VerificationError


@dataclass(frozen=True, eq=False)
class IntervalChain:
    """An interval DTMC as CSR arrays: transition ``e`` of row ``s`` lies in ``[lower[e], upper[e]]``."""

    indptr: np.ndarray
    indices: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    labels: Mapping[str, np.ndarray]
    initial_states: np.ndarray
    describe: Callable[[int], str] = field(default=str, compare=False, repr=False)

    @property
    def n_states(self) -> int:
        return len(self.indptr) - 1

    @property
    def n_transitions(self) -> int:
        return len(self.indices)

    def rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.indptr))


def decision_bins(system: AbstractSystem, observations: ObservationModel) -> np.ndarray:
    """The bins whose intervals can change P(φ) at the initial states: bins of the states reachable from them
    (through any observation) whose successor depends on the observation. The Bonferroni split over exactly
    these bins makes the interval chain's joint level the stated one (issue 24 item 7)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    n = int(system.n_states)
    bins, succ = successor_table(system, observations)
    m = succ.shape[1]
    start = initial_states(system)
    graph = csr_matrix((np.ones(n * m + start.size, dtype=np.int8),
                        (np.concatenate([np.repeat(np.arange(n), m), np.full(start.size, n)]),
                         np.concatenate([succ.ravel(), start]))), shape=(n + 1, n + 1))
    reached = breadth_first_order(graph, n, directed=True, return_predecessors=False)
    reached = reached[reached < n]
    deciding = reached[(succ[reached] != succ[reached, :1]).any(axis=1)]
    return np.unique(bins[deciding])


def build_interval_chain(system: AbstractSystem, observations: ObservationModel) -> IntervalChain:
    """Algorithm 3 on intervals: merge the observations' intervals per successor, cap the upper sum at 1.

    Keeps every transition with a positive upper bound (an observation never seen still has ``lower = 0``
    and a positive upper bound, so the interval chain may have transitions the point chain lacks).
    """
    if not observations.has_intervals:
        raise VerificationError(f"{observations.source or 'observation model'}: no lower/upper intervals given")
    n = int(system.n_states)
    bins, succ = successor_table(system, observations)
    assert observations.lower is not None and observations.upper is not None
    _, succ_sorted, (lo, hi) = merge_successors(succ, observations.lower[bins], observations.upper[bins])
    keep = last_of_run(succ_sorted) & (hi > 0)
    rows = np.nonzero(keep)[0]
    lo, hi = lo[keep], np.minimum(hi[keep], 1.0)
    lo_sum = np.bincount(rows, weights=lo, minlength=n)
    hi_sum = np.bincount(rows, weights=hi, minlength=n)
    bad = np.flatnonzero((lo_sum > 1 + ROW_SUM_TOLERANCE) | (hi_sum < 1 - ROW_SUM_TOLERANCE))
    if bad.size:
        s = int(bad[0])
        raise VerificationError(
            f"{observations.source + ': ' if observations.source else ''}intervals of state {system.describe(s)} "
            f"admit no distribution: lower bounds sum to {float(lo_sum[s])!r}, upper bounds to {float(hi_sum[s])!r} "
            f"({bad.size} states affected)"
        )
    return IntervalChain(
        indptr=_readonly(csr_indptr(rows, n)),
        indices=_readonly(succ_sorted[keep]),
        lower=_readonly(lo),
        upper=_readonly(hi),
        labels=check_labels(system.labels, n),
        initial_states=_readonly(initial_states(system)),
        describe=system.describe,
    )


def interval_storm_model(chain: IntervalChain, labels: Mapping[str, np.ndarray] | None = None) -> Any:
    """The chain as ``stormpy.SparseDtmc[Interval]`` (IDTMC) with ``labels`` (default: the chain's own), handed over
    as Storm's binary UMB archive (`storm_umb.py`: no Python object per transition)."""
    from perception_safety.verification.storm_umb import storm_dtmc

    bounds = np.column_stack([chain.lower, chain.upper])
    chosen = chain.labels if labels is None else labels
    return storm_dtmc(chain.indptr, chain.indices, bounds, chain.initial_states, chosen)
