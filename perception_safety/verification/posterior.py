"""Bayesian view of P(φ): Dirichlet posterior per confusion column, Monte Carlo over whole matrices (issue 13).

Each draw is one set of matrices (`CountedObservations.sample`); the chain's structure (Algorithm 3's
successors) is fixed, so a draw only changes the transition values: ``data = mixing @ μ`` (one sparse
product for all draws). ``P(hold U goal)`` is then solved for all draws at once, component by component of
the maybe-graph in topological order (`reach.until_structure`): a single state with a self-loop is
``x = Σ_{t≠s} p x_t / (1 − p_ss)``, a larger component is a batched dense solve. No Storm call per draw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from perception_safety.verification.builder import (
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
from perception_safety.verification.reach import ReachForm, UntilStructure, form_masks, reach_form, until_structure
from perception_safety.verification.until_solve import (
    REDUCEAT_SEQUENTIAL,
    Level,
    component_levels,
    solvable,
    solve_until_batch,
    solve_until_many,
)


def reachable_mask(graph: Any, initial_states: np.ndarray) -> np.ndarray:
    """Mask of the states reachable in ``graph`` (a scipy sparse matrix, an edge where non-zero) from the initial
    states."""
    from scipy.sparse.csgraph import breadth_first_order

    keep = np.zeros(graph.shape[0], dtype=bool)
    for s in np.asarray(initial_states).tolist():
        keep[breadth_first_order(graph, int(s), directed=True, return_predecessors=False)] = True
    return keep


@dataclass(frozen=True, eq=False)
class ChainSkeleton:
    """Every transition ``(s, K(s, y))`` Algorithm 3 can produce, and which ``(bin, outcome)`` feeds it.

    ``mixing[t, bin * n_outcomes + o] = 1`` when outcome ``o`` of a state in ``bin`` leads along ``t``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    mixing: Any
    n_bins: int
    n_outcomes: int
    labels: Mapping[str, np.ndarray]
    initial_states: np.ndarray
    describe: Callable[[int], str] = field(default=str, compare=False, repr=False)
    _plans: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def n_states(self) -> int:
        return len(self.indptr) - 1

    @cached_property
    def reachable(self) -> np.ndarray:
        """Mask of the states reachable from the initial ones: the only states whose values P(φ) at the initial
        states reads (most of a memory chain's ``(state, last observation)`` pairs are never reached)."""
        from scipy.sparse import csr_matrix

        n = self.n_states
        graph = csr_matrix((np.ones(len(self.indices), dtype=np.int8), self.indices, self.indptr), shape=(n, n))
        return reachable_mask(graph, self.initial_states)

    @cached_property
    def order(self) -> list[Level]:
        """`component_levels` of the chain: one solving order for every formula (`solve_until_many`)."""
        return component_levels(self.indptr, self.indices)

    def plan(self, formula: str) -> tuple[ReachForm, np.ndarray, np.ndarray, UntilStructure]:
        """``(form, hold, goal, structure)`` of ``formula`` on this structure, worked out once per skeleton (the sweep
        solves the posterior draws and the per-episode chains on the same skeleton); raises `VerificationError` for
        a formula of another shape."""
        if formula not in self._plans:
            try:
                form = reach_form(formula)
                hold, goal = form_masks(form, self.labels, self.initial_states, self.n_states)
                self._plans[formula] = (form, hold, goal, until_structure(self.indptr, self.indices, hold, goal))
            except VerificationError as exc:
                self._plans[formula] = exc
        plan = self._plans[formula]
        if isinstance(plan, VerificationError):
            raise plan
        return plan

    def data(self, probs: np.ndarray, states: np.ndarray | None = None) -> np.ndarray:
        """Transition values ``[draw, t]`` from observation probabilities ``[draw, bin, outcome]``; with ``states``
        (a mask) only their transitions' (the others 0: each value is its own row of the product)."""
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim == 2:
            p = p[None]
        if p.shape[1:] != (self.n_bins, self.n_outcomes):
            raise VerificationError(f"expected probabilities [draw, {self.n_bins}, {self.n_outcomes}], got {p.shape}")
        x = p.reshape(p.shape[0], -1).T
        if states is None or states.all():
            return np.asarray((self.mixing @ x).T)
        rows = np.repeat(states, np.diff(self.indptr))
        out = np.zeros((len(self.indices), p.shape[0]))
        out[rows] = self.mixing[np.flatnonzero(rows)] @ x
        return out.T


def chain_skeleton(system: AbstractSystem, observations: ObservationModel) -> ChainSkeleton:
    """The structure of `builder.build_chain` for ``system`` (same successors, same bins), without values."""
    from scipy.sparse import csr_matrix

    n = int(system.n_states)
    bins, succ = successor_table(system, observations)
    m = succ.shape[1]
    order, succ_sorted, _ = merge_successors(succ)
    keep = last_of_run(succ_sorted)
    tid = (np.cumsum(keep.ravel()) - keep.ravel()).reshape(keep.shape)  # each entry's run = its transition
    cols = bins[:, None] * m + order
    n_t = int(keep.sum())
    mixing = csr_matrix((np.ones(tid.size), (tid.ravel(), cols.ravel())), shape=(n_t, observations.probs.shape[0] * m))
    return ChainSkeleton(
        indptr=_readonly(csr_indptr(np.nonzero(keep)[0], n)),
        indices=_readonly(succ_sorted[keep]),
        mixing=mixing,
        n_bins=observations.probs.shape[0],
        n_outcomes=m,
        labels=check_labels(system.labels, n),
        initial_states=_readonly(initial_states(system)),
        describe=system.describe,
    )


@dataclass(frozen=True)
class PosteriorSummary:
    """Equal-tailed credible interval ``[lower, upper]`` at ``level`` and the posterior mean, per initial state;
    ``mc_error``: the Monte-Carlo standard error of the interval's ends (the larger of the two) and of the mean."""

    lower: np.ndarray
    upper: np.ndarray
    mean: np.ndarray
    draws: int
    level: float
    mc_error: np.ndarray | None = None


def quantile_mc_error(values: np.ndarray, q: float) -> np.ndarray:
    """Monte-Carlo standard error of the ``q``-quantile of ``values`` (axis 0) from the order statistics one
    binomial standard deviation ``sqrt(D q (1 − q))`` either side of ``D q``: half their distance."""
    lo_i, hi_i = _order_indices(values.shape[0], q)
    s = np.sort(values, axis=0)
    return (s[hi_i] - s[lo_i]) / 2


def _order_indices(d: int, q: float) -> tuple[int, int]:
    """The order statistics `quantile_mc_error` reads: one binomial standard deviation either side of ``D q``."""
    half = np.sqrt(d * q * (1 - q))
    return int(np.clip(np.floor(d * q - half), 0, d - 1)), int(np.clip(np.ceil(d * q + half), 0, d - 1))


def summarise(values: np.ndarray, level: float) -> PosteriorSummary:
    """Equal-tailed ``level`` credible interval over draws (axis 0), with its Monte-Carlo error."""
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)
    err = np.maximum.reduce([quantile_mc_error(values, (1 - level) / 2), quantile_mc_error(values, (1 + level) / 2),
                             values.std(axis=0) / np.sqrt(values.shape[0])])
    return PosteriorSummary(lower=lo, upper=hi, mean=values.mean(axis=0), draws=values.shape[0], level=level,
                            mc_error=err)


def summarise_many(values: list[np.ndarray], level: float) -> list[PosteriorSummary]:
    """`summarise` of each ``values[i]`` (draws on axis 0), the quantiles and their Monte-Carlo errors of all in one
    call (column by column, so the same numbers); the mean and its error block by block, as `summarise` sums them."""
    qs = ((1 - level) / 2, (1 + level) / 2)
    both = np.concatenate(values, axis=1)
    lo, hi = np.quantile(both, qs, axis=0)
    (a0, b0), (a1, b1) = (_order_indices(both.shape[0], q) for q in qs)
    part = np.partition(both, sorted({a0, b0, a1, b1}), axis=0)  # those order statistics, as a sort puts them
    q_err = np.maximum((part[b0] - part[a0]) / 2, (part[b1] - part[a1]) / 2)
    cut = np.cumsum([0, *(v.shape[1] for v in values)])
    out = []
    for v, a, b in zip(values, cut[:-1], cut[1:], strict=True):
        err = np.maximum.reduce([q_err[a:b], v.std(axis=0) / np.sqrt(v.shape[0])])
        out.append(PosteriorSummary(lower=lo[a:b], upper=hi[a:b], mean=v.mean(axis=0), draws=v.shape[0], level=level,
                                    mc_error=err))
    return out


def round_to_error(value: float, error: float) -> float:
    """``value`` rounded to the decimal of ``error``'s leading digit: no digit finer than the MC noise."""
    if not (np.isfinite(error) and error > 0):
        return float(value)
    return float(round(value, int(-np.floor(np.log10(error)))))


def posterior_values(skeleton: ChainSkeleton, probs: np.ndarray,
                     formulas: Mapping[str, str]) -> dict[str, np.ndarray | VerificationError]:
    """P(φ) ``[draw, initial state]`` for every formula (``reach.reach_form`` shapes; others map to the error);
    every formula in one pass (`until_solve.solve_until_many`) when the formulas' maybe-sets are unions of the
    chain's strongly connected components (the car-pedestrian chains and their memory products). Only the
    transitions of states reachable from the initial ones get values (the others are never read)."""
    data = skeleton.data(probs, skeleton.reachable)
    out: dict[str, np.ndarray | VerificationError] = {}
    plans = {}
    for name, formula in formulas.items():
        try:
            plans[name] = skeleton.plan(formula)
        except VerificationError as exc:
            out[name] = exc
            continue
        out[name] = np.empty(0)  # keeps the formulas' order
    masks = [(goal, st.maybe & skeleton.reachable) for _, _, goal, st in plans.values()]
    many = plans and np.diff(skeleton.indptr).max(initial=0) <= REDUCEAT_SEQUENTIAL and solvable(skeleton.order, masks)
    if many:
        solved = dict(zip(plans, solve_until_many(skeleton.indptr, skeleton.indices, data, masks, skeleton.order),
                          strict=True))
    for name, (form, hold, goal, structure) in plans.items():
        x = solved[name] if many else solve_until_batch(skeleton.indptr, skeleton.indices, data, hold, goal, structure)
        x = x[:, skeleton.initial_states]
        out[name] = 1.0 - x if form.negate else x
    return out
