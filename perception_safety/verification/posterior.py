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


def round_to_error(value: float, error: float) -> float:
    """``value`` rounded to the decimal of ``error``'s leading digit: no digit finer than the MC noise."""
    if not (np.isfinite(error) and error > 0):
        return float(value)
    return float(round(value, int(-np.floor(np.log10(error)))))


def posterior_values(skeleton: ChainSkeleton, probs: np.ndarray,
                     formulas: Mapping[str, str]) -> dict[str, np.ndarray | VerificationError]:
    """P(φ) ``[draw, initial state]`` for every formula (``reach.reach_form`` shapes; others map to the error)."""
    data = skeleton.data(probs)
    out: dict[str, np.ndarray | VerificationError] = {}
    for name, formula in formulas.items():
        try:
            form, hold, goal, structure = skeleton.plan(formula)
        except VerificationError as exc:
            out[name] = exc
            continue
        x = solve_until_batch(skeleton.indptr, skeleton.indices, data, hold, goal, structure)
        x = x[:, skeleton.initial_states]
        out[name] = 1.0 - x if form.negate else x
    return out
