"""``P(s ⊨ hold U goal)`` for many draws of a chain's transition values at once (the posterior, the per-episode
chains): numpy on one CSR structure, no Storm call per draw.

`solve_until_batch` solves one formula component by component of its maybe-graph in topological order
(`reach.until_structure`): a single state with a self-loop is ``x = Σ_{t≠s} p x_t / (1 − p_ss)``, a larger
component a batched dense solve. `solve_until_many` does the same arithmetic for every formula of a chain in one
pass over the chain's own strongly connected components (`component_levels`), where each formula's maybe-set is a
union of them (`solvable`): the same numbers, bit for bit (tests/verification/test_sweep_chain.py), one pass
instead of one per formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perception_safety.verification.reach import UntilStructure, until_structure

REDUCEAT_SEQUENTIAL = 8
"""Rows up to this many transitions: `np.add.reduceat` adds them as ``first + (0 + second + third + …)``, which
`solve_until_many` repeats term for term; longer runs numpy adds pairwise (formula by formula then)."""


@dataclass(frozen=True)
class Level:
    """Strongly connected components whose successors (outside themselves) lie in earlier levels: the one-state
    ones (``singles``) and the larger ones (``blocks``, each its states ascending)."""

    singles: np.ndarray
    blocks: tuple[np.ndarray, ...]


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


def component_levels(indptr: np.ndarray, indices: np.ndarray) -> list[Level]:
    """The chain's strongly connected components in levels (Kahn's algorithm on the condensation, sinks first)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(indptr) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    graph = csr_matrix((np.ones(rows.size, dtype=np.int8), cols, np.asarray(indptr)), shape=(n, n))
    n_comp, comp = connected_components(graph, directed=True, connection="strong")
    cross = comp[rows] != comp[cols]
    cr, cc = comp[rows][cross], comp[cols][cross]
    outdeg = np.bincount(cr, minlength=n_comp)
    preds = cr[np.argsort(cc, kind="stable")]
    pstart = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(np.bincount(cc, minlength=n_comp), out=pstart[1:])
    sizes = np.bincount(comp, minlength=n_comp)
    members = np.argsort(comp, kind="stable")  # states by component, ascending within each
    first = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(sizes, out=first[1:])
    out = []
    frontier = np.flatnonzero(outdeg == 0)
    while frontier.size:
        big = frontier[sizes[frontier] > 1]
        out.append(Level(members[first[frontier[sizes[frontier] == 1]]],
                         tuple(members[first[c]:first[c + 1]] for c in big)))
        p = preds[_ranges(pstart[frontier], pstart[frontier + 1])]
        np.subtract.at(outdeg, p, 1)
        frontier = np.unique(p[outdeg[p] == 0])
    return out


def solvable(levels: list[Level], masks: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether every formula's maybe-set holds each larger component wholly or not at all (then the components of
    its maybe-graph are the chain's own, and `solve_until_many` meets them in a valid order)."""
    for level in levels:
        for block in level.blocks:
            for _, maybe in masks:
                inside = maybe[block]
                if inside.any() and not inside.all():
                    return False
    return True


def solve_until_many(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                     masks: list[tuple[np.ndarray, np.ndarray]], levels: list[Level]) -> np.ndarray:
    """``P(s ⊨ hold_k U goal_k)`` ``[k, draw, state]`` for every ``(goal_k, maybe_k)`` of ``masks`` (`solvable`) in
    one pass over ``levels``: `solve_until_batch`'s arithmetic for each formula (a single maybe state: its
    successors' values weighted over what does not loop back, summed as `np.add.reduceat` sums; a component: the
    same dense system, solved per draw and formula), so the same numbers for every formula at once."""
    n, d, k = len(indptr) - 1, data.shape[0], len(masks)
    vals_all = np.ascontiguousarray(np.asarray(data, dtype=np.float64).T)  # [t, draw]
    x = np.zeros((n, k, d))
    maybe = np.zeros((n, k), dtype=bool)
    for j, (goal, mask) in enumerate(masks):
        x[goal, j] = 1.0
        maybe[:, j] = mask
    flat = x.reshape(n * k, d)  # a view: row s * k + j is x[s, j]
    widest = max((int(maybe[level.singles].sum()) for level in levels), default=0)
    buf = np.empty((3, widest, d))  # reused level to level (fresh memory costs a page fault per 4 kB)
    for level in levels:
        row, form = np.nonzero(maybe[level.singles])  # the (state, formula) pairs to solve: maybe states only
        if row.size:
            _singles(indptr, indices, vals_all, flat, level.singles[row], form, buf)
        for states in level.blocks:
            which = np.flatnonzero(maybe[states[0]])
            if which.size:
                x[states[:, None], which[None, :]] = _block(indptr, indices, vals_all, x[:, which], states)
    return np.moveaxis(x, 0, 2)


def _singles(indptr: np.ndarray, indices: np.ndarray, vals_all: np.ndarray, flat: np.ndarray, s: np.ndarray,
             form: np.ndarray, buf: np.ndarray) -> None:
    """``x`` of one-state components ``s`` for formulas ``form`` (pairs), written into ``flat`` (row ``s * k + j``):
    the successors' values weighted, over what does not loop back, summed as `np.add.reduceat` sums them."""
    k, d = flat.shape[0] // (len(indptr) - 1), flat.shape[1]
    lens = indptr[s + 1] - indptr[s]  # >= 1: a maybe state reaches the goal
    by = np.argsort(-lens, kind="stable")  # most transitions first: the pairs with a j-th one are a prefix
    s, form, lens = s[by], form[by], lens[by]
    first = indptr[s]
    m = s.size
    num, term, other = buf[0, :m], buf[1, :m], buf[2, :m]
    num.fill(0.0)  # np.add.reduceat adds a run as its first term + (0 + the others in order)
    for j in range(1, int(lens[0])):
        c = int(np.count_nonzero(lens > j))
        np.take(vals_all, first[:c] + j, axis=0, out=term[:c])
        np.take(flat, indices[first[:c] + j] * k + form[:c], axis=0, out=other[:c])
        term[:c] *= other[:c]  # x of a maybe state is still 0 here
        num[:c] += term[:c]
    np.take(vals_all, first, axis=0, out=term)
    np.take(flat, indices[first] * k + form, axis=0, out=other)
    term *= other
    np.add(term, num, out=num)
    for i in _looped(indptr, indices, s):  # rows without a self-loop: leave = 1 - 0, num / 1 = num exactly
        e = np.arange(indptr[s[i]], indptr[s[i] + 1])
        loop = indices[e] == s[i]
        rest = _sequential(vals_all[e[1:]] * loop[1:, None]) if e.size > 1 else np.zeros(d)
        leave = 1.0 - (vals_all[e[0]] * loop[0] + rest)
        num[i] = np.divide(num[i], leave, out=np.zeros_like(leave), where=leave > 0)
    flat[s * k + form] = num


def _looped(indptr: np.ndarray, indices: np.ndarray, states: np.ndarray) -> np.ndarray:
    """Positions in ``states`` of the states with a transition to themselves."""
    rows = np.repeat(np.arange(states.size), indptr[states + 1] - indptr[states])
    e = _ranges(indptr[states], indptr[states + 1])
    return np.unique(rows[indices[e] == states[rows]])


def _sequential(terms: np.ndarray) -> np.ndarray:
    """``0 + t_0 + t_1 + …`` in order over axis 0 (how `np.add.reduceat` adds a run after its first term)."""
    out = np.zeros(terms.shape[1])
    for t in terms:
        out += t
    return out


def _block(indptr: np.ndarray, indices: np.ndarray, vals_all: np.ndarray, x: np.ndarray,
           states: np.ndarray) -> np.ndarray:
    """``x[states]`` ``[state, formula, draw]`` of one strongly connected block of maybe states: per formula and
    draw `solve_until_batch`'s dense system (one batched solve, each matrix on its own)."""
    n, k, d = x.shape
    size = states.size
    local = np.full(n, -1)
    local[states] = np.arange(size)
    e = _ranges(indptr[states], indptr[states + 1])
    src = local[np.repeat(states, indptr[states + 1] - indptr[states])]
    tgt = indices[e]
    inside = local[tgt] >= 0
    q = np.zeros((size * size, d))
    np.add.at(q, src[inside] * size + local[tgt[inside]], vals_all[e[inside]])
    a = np.eye(size) - np.moveaxis(q.reshape(size, size, d), 2, 0)  # [draw, size, size]
    out = np.empty((size, k, d))
    rhs = []
    for j in range(k):
        b = np.zeros((size, d))
        np.add.at(b, src[~inside], vals_all[e[~inside]] * x[tgt[~inside], j])
        rhs.append(b.T[..., None])
    sol = np.linalg.solve(np.broadcast_to(a, (k, *a.shape)), np.stack(rhs))[..., 0]  # [formula, draw, size]
    out[:] = np.moveaxis(sol, 2, 0)
    return out
