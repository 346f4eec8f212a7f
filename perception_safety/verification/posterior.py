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
    def order(self) -> tuple[tuple[np.ndarray, ...], np.ndarray] | None:
        """`dag_levels` of the chain: one solving order for every formula (`solve_until_many`)."""
        return dag_levels(self.indptr, self.indices)

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

    def data(self, probs: np.ndarray) -> np.ndarray:
        """Transition values ``[draw, t]`` from observation probabilities ``[draw, bin, outcome]``."""
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim == 2:
            p = p[None]
        if p.shape[1:] != (self.n_bins, self.n_outcomes):
            raise VerificationError(f"expected probabilities [draw, {self.n_bins}, {self.n_outcomes}], got {p.shape}")
        return np.asarray((self.mixing @ p.reshape(p.shape[0], -1).T).T)


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


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    lens = stops - starts
    return np.repeat(starts, lens) + np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)


def solve_until_batch(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, hold: np.ndarray,
                      goal: np.ndarray, structure: UntilStructure | None = None) -> np.ndarray:
    """``P(s ⊨ hold U goal)`` ``[draw, state]`` for transition values ``data[draw, t]`` on one CSR structure."""
    st = structure or until_structure(indptr, indices, hold, goal)
    n, d = len(indptr) - 1, data.shape[0]
    vals_all = np.ascontiguousarray(np.asarray(data, dtype=np.float64).T)  # [t, draw]: gathers are row copies
    x = np.zeros((n, d))
    x[goal] = 1.0
    maybe_states = np.flatnonzero(st.maybe)
    by_comp = maybe_states[np.argsort(st.comp[maybe_states], kind="stable")]
    sizes = np.bincount(st.comp[maybe_states], minlength=len(maybe_states))
    first = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=first[1:])
    for level in st.levels:
        single = level[sizes[level] == 1]
        if single.size:
            s = by_comp[first[single]]
            lens = indptr[s + 1] - indptr[s]  # >= 1: a maybe state reaches the goal, so it has a successor
            e = _ranges(indptr[s], indptr[s + 1])
            tgt = indices[e]
            loop = tgt == np.repeat(s, lens)
            vals = vals_all[e]
            starts = np.cumsum(lens) - lens
            num = np.add.reduceat(vals * x[tgt], starts, axis=0)  # x of a maybe state is still 0 here
            leave = 1.0 - np.add.reduceat(vals * loop[:, None], starts, axis=0)
            x[s] = np.divide(num, leave, out=np.zeros_like(num), where=leave > 0)
        for c in level[sizes[level] > 1]:
            states = by_comp[first[c]:first[c + 1]]
            local = np.full(n, -1)
            local[states] = np.arange(states.size)
            e = _ranges(indptr[states], indptr[states + 1])
            src = local[np.repeat(states, indptr[states + 1] - indptr[states])]
            tgt = indices[e]
            inside = local[tgt] >= 0
            k = states.size
            q = np.zeros((k * k, d))
            np.add.at(q, src[inside] * k + local[tgt[inside]], vals_all[e[inside]])
            b = np.zeros((k, d))
            np.add.at(b, src[~inside], vals_all[e[~inside]] * x[tgt[~inside]])
            a = np.eye(k) - np.moveaxis(q.reshape(k, k, d), 2, 0)
            x[states] = np.linalg.solve(a, b.T[..., None])[..., 0].T
    return x.T


REDUCEAT_SEQUENTIAL = 8
"""Rows up to this many transitions: `np.add.reduceat` adds them as ``first + (0 + second + third + …)``, which
`solve_until_many` repeats term for term; longer runs numpy adds pairwise (formula by formula then)."""


def dag_levels(indptr: np.ndarray, indices: np.ndarray) -> tuple[tuple[np.ndarray, ...], np.ndarray] | None:
    """``(levels, closed)``: ``closed`` marks the states of closed classes (strongly connected components no
    transition leaves: absorbing states, or an absorbing car state with the memory chain's last observation cycling);
    ``levels`` order every other state so that its successors other than itself lie in earlier levels or are
    closed. None when a cycle longer than a self-loop lies outside the closed classes."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(indptr) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    graph = csr_matrix((np.ones(rows.size, dtype=np.int8), np.asarray(indices), np.asarray(indptr)), shape=(n, n))
    _, comp = connected_components(graph, directed=True, connection="strong")
    leaves = np.bincount(comp[rows], weights=comp[rows] != comp[indices], minlength=int(comp.max()) + 1) > 0
    closed = ~leaves[comp]
    if np.bincount(comp[~closed]).max(initial=1) > 1:
        return None
    st = until_structure(indptr, indices, np.ones(n, dtype=bool), closed)
    maybe = np.flatnonzero(st.maybe)
    state_of = np.empty(maybe.size, dtype=np.int64)
    state_of[st.comp[maybe]] = maybe
    return tuple(state_of[level] for level in st.levels), closed


def solve_until_many(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                     masks: list[tuple[np.ndarray, np.ndarray]], order: tuple[np.ndarray, ...]) -> np.ndarray:
    """``P(s ⊨ hold_k U goal_k)`` ``[k, draw, state]`` for every ``(goal_k, maybe_k)`` of ``masks`` in one pass over
    ``order`` (`dag_levels`' levels, which must hold every maybe state): the same arithmetic, state by state, as
    `solve_until_batch` on each (a maybe state's value is its successors' values weighted, over what does not loop
    back), so the same numbers, for every formula at once instead of one pass per formula."""
    n, d, k = len(indptr) - 1, data.shape[0], len(masks)
    vals_all = np.ascontiguousarray(np.asarray(data, dtype=np.float64).T)  # [t, draw]
    x = np.zeros((n, k, d))
    maybe = np.zeros((n, k), dtype=bool)
    for j, (goal, mask) in enumerate(masks):
        x[goal, j] = 1.0
        maybe[:, j] = mask
    n_t = len(indices)
    vals_all = np.concatenate([vals_all, np.zeros((1, d))])  # row n_t: the padding edge, value 0
    for s in order:
        lens = indptr[s + 1] - indptr[s]
        width = np.arange(int(lens.max()))
        edge = np.where(width < lens[:, None], indptr[s][:, None] + width, n_t)  # [state, j]: j-th edge or padding
        tgt = np.append(indices, 0)[edge]
        terms = [(vals_all[edge[:, j]], tgt[:, j]) for j in width]
        num = np.zeros((s.size, k, d))  # as np.add.reduceat adds a run: its first term + (0 + the others in order)
        stay = np.zeros((s.size, d))
        for v, t in terms[1:]:
            num += v[:, None, :] * x[t]  # x of a maybe state is still 0 here
            stay += v * (t == s)[:, None]
        v, t = terms[0]
        num = v[:, None, :] * x[t] + num
        stay = v * (t == s)[:, None] + stay
        leave = np.broadcast_to((1.0 - stay)[:, None, :], num.shape)
        new = np.divide(num, leave, out=np.zeros_like(num), where=leave > 0)
        x[s] = np.where(maybe[s][:, :, None], new, x[s])
    return np.moveaxis(x, 0, 2)


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
    d = values.shape[0]
    half = np.sqrt(d * q * (1 - q))
    lo_i, hi_i = int(np.clip(np.floor(d * q - half), 0, d - 1)), int(np.clip(np.ceil(d * q + half), 0, d - 1))
    s = np.sort(values, axis=0)
    return (s[hi_i] - s[lo_i]) / 2


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
    q_err = np.maximum(quantile_mc_error(both, qs[0]), quantile_mc_error(both, qs[1]))
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
    every formula in one pass (`solve_until_many`) when the chain's only cycles are self-loops."""
    data = skeleton.data(probs)
    out: dict[str, np.ndarray | VerificationError] = {}
    plans = {}
    for name, formula in formulas.items():
        try:
            plans[name] = skeleton.plan(formula)
        except VerificationError as exc:
            out[name] = exc
            continue
        out[name] = np.empty(0)  # keeps the formulas' order
    order = skeleton.order if plans else None
    if order is not None and (np.diff(skeleton.indptr).max(initial=0) > REDUCEAT_SEQUENTIAL
                              or any((st.maybe & order[1]).any() for _, _, _, st in plans.values())):
        order = None  # a cycle to solve (a closed class's state can reach the goal), or sums numpy adds pairwise
    if order is not None:
        xs = solve_until_many(skeleton.indptr, skeleton.indices, data,
                              [(goal, st.maybe) for _, _, goal, st in plans.values()], order[0])
        solved = dict(zip(plans, xs, strict=True))
    for name, (form, hold, goal, structure) in plans.items():
        if order is not None:
            x = solved[name]
        else:
            x = solve_until_batch(skeleton.indptr, skeleton.indices, data, hold, goal, structure)
        x = x[:, skeleton.initial_states]
        out[name] = 1.0 - x if form.negate else x
    return out
