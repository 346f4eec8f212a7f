"""Specs as constrained reachability, and the graph structure that makes interval bounds exact.

A spec ``P=? [ψ]`` is read as ``P(hold U goal)`` or ``1 − P(hold U goal)`` over state-label masks:

- ``F a`` → ``true U a``; ``a U b`` as is;
- ``G a`` → ``1 − P(true U ¬a)`` (Storm 2.0 has no ``G`` for interval models; the complement turns the lower
  bound of ``G a`` into ``1 −`` the upper bound of ``F ¬a`` and vice versa);
- ``(G a) & (G b) & …`` (the paper's φ) → ``G (a & b & …)``.

The propositional parts (``!``, ``&``, ``|``, parentheses, quoted labels, ``true``/``false``; Storm's
precedence) are evaluated here to boolean masks. Other shapes (``X``, bounded or nested operators) raise
`VerificationError`: the caller reports them instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from perception_safety.verification.errors import VerificationError

_TOKEN = re.compile(r'\s*("[^"]*"|!|&|\||\(|\)|[A-Za-z_][A-Za-z0-9_]*|\S)')


@dataclass(frozen=True)
class ReachForm:
    """``P(φ) = P(hold U goal)`` (``negate`` False) or ``1 − P(hold U goal)`` (``negate`` True)."""

    hold: str
    goal: str
    negate: bool


@lru_cache(maxsize=256)
def _tokens(text: str) -> tuple[str, ...]:
    """The formula's tokens (read once per text: the sweep reads the same few formulas for every chain)."""
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        out.append(m.group(1))
        pos = m.end()
    return tuple(out)


def _top_level_split(tokens: Sequence[str], op: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = 0
    for t in tokens:
        depth += (t == "(") - (t == ")")
        if t == op and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _strip_parens(tokens: Sequence[str]) -> Sequence[str]:
    while len(tokens) >= 2 and tokens[0] == "(" and tokens[-1] == ")":
        depth = 0
        for i, t in enumerate(tokens):
            depth += (t == "(") - (t == ")")
            if depth == 0 and i < len(tokens) - 1:
                return tokens
        tokens = tokens[1:-1]
    return tokens


@lru_cache(maxsize=256)
def reach_form(formula: str) -> ReachForm:
    """Read ``P=? [F a]``, ``P=? [a U b]``, ``P=? [G a]`` or ``P=? [(G a) & (G b) …]`` as a `ReachForm`."""
    m = re.fullmatch(r"\s*P\s*=\s*\?\s*\[(.*)\]\s*", formula, flags=re.S)
    if m is None:
        raise VerificationError(f"formula {formula!r}: bounds need a 'P=? [...]' query")
    tokens = _strip_parens(_tokens(m.group(1)))
    conj = [_strip_parens(p) for p in _top_level_split(tokens, "&")]
    if len(conj) > 1 and all(p and p[0] == "G" for p in conj):
        safe = " & ".join("(" + " ".join(p[1:]) + ")" for p in conj)
        form = ReachForm("true", f"!({safe})", True)
    elif tokens and tokens[0] == "F":
        form = ReachForm("true", " ".join(tokens[1:]), False)
    elif tokens and tokens[0] == "G":
        form = ReachForm("true", "!(" + " ".join(tokens[1:]) + ")", True)
    else:
        until = _top_level_split(tokens, "U")
        if len(until) != 2:
            raise VerificationError(f"formula {formula!r}: bounds support F, G, U and conjunctions of G only")
        form = ReachForm(" ".join(until[0]), " ".join(until[1]), False)
    for part in (form.hold, form.goal):
        if not part.strip():
            raise VerificationError(f"formula {formula!r}: empty operand")
    return form


class _Parser:
    """Recursive descent: or := and ('|' and)*; and := not ('&' not)*; not := '!' not | atom."""

    def __init__(self, text: str, labels: Mapping[str, np.ndarray], n: int) -> None:
        self.tokens, self.i, self.labels, self.n, self.text = _tokens(text), 0, labels, n, text

    def fail(self, what: str) -> VerificationError:
        return VerificationError(f"state formula {self.text!r}: {what}")

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        t = self.peek()
        if t is None:
            raise self.fail("unexpected end")
        self.i += 1
        return t

    def parse(self) -> np.ndarray:
        mask = self.disj()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r} (only !, &, |, parentheses and labels are supported)")
        return mask

    def disj(self) -> np.ndarray:
        mask = self.conj()
        while self.peek() == "|":
            self.take()
            mask = mask | self.conj()
        return mask

    def conj(self) -> np.ndarray:
        mask = self.neg()
        while self.peek() == "&":
            self.take()
            mask = mask & self.neg()
        return mask

    def neg(self) -> np.ndarray:
        if self.peek() == "!":
            self.take()
            return ~self.neg()
        return self.atom()

    def atom(self) -> np.ndarray:
        t = self.take()
        if t == "(":
            mask = self.disj()
            if self.take() != ")":
                raise self.fail("missing ')'")
            return mask
        if t in ("true", "false"):
            return np.full(self.n, t == "true")
        if t.startswith('"') and t.endswith('"') and len(t) >= 2:
            name = t[1:-1]
            if name not in self.labels:
                raise self.fail(f"unknown label {name!r}; known: {sorted(self.labels)}")
            return np.asarray(self.labels[name], dtype=bool)
        raise self.fail(f"unexpected {t!r} (only !, &, |, parentheses and labels are supported)")


def state_mask(text: str, labels: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Boolean mask of the states satisfying a propositional formula over quoted labels."""
    return _Parser(text, labels, n).parse()


def form_masks(form: ReachForm, labels: Mapping[str, np.ndarray], initial: np.ndarray,
               n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(hold, goal)`` masks; ``"init"`` names the initial states, ``"deadlock"`` none (no deadlocks)."""
    init = np.zeros(n, dtype=bool)
    init[np.asarray(initial, dtype=np.int64)] = True
    full = {**labels, "init": init, "deadlock": np.zeros(n, dtype=bool)}
    return state_mask(form.hold, full, n), state_mask(form.goal, full, n)


@dataclass(frozen=True, eq=False)
class UntilStructure:
    """Graph facts of ``hold U goal`` on a chain's support (every transition that can be positive).

    ``maybe``: hold states, not goal, from which the goal is reachable through hold states (all other
    non-goal states have value 0 under every choice of probabilities). ``comp``: strongly connected
    component of each maybe state (-1 elsewhere); ``levels``: component ids in solving order (a component's
    maybe-successors lie in earlier levels); ``cyclic``: some maybe state lies on a cycle (self-loops count).
    Acyclic ⇒ every path leaves ``maybe`` within ``len(levels)`` steps.
    """

    maybe: np.ndarray
    comp: np.ndarray
    levels: tuple[np.ndarray, ...]
    cyclic: bool

    @property
    def depth(self) -> int:
        return len(self.levels)


CACHED_STATES = 100_000
"""Chains up to this many states have their `UntilStructure` kept by content (`until_structure`)."""


def until_structure(indptr: np.ndarray, indices: np.ndarray, hold: np.ndarray, goal: np.ndarray) -> UntilStructure:
    """`UntilStructure` by one backward BFS and Kahn's algorithm on the SCC condensation (numpy/scipy).

    A sweep asks for the same structure many times (every variant's interval chain and posterior skeleton at a
    max speed share it): up to `CACHED_STATES` states the result is kept, keyed by the arrays' bytes (a few
    milliseconds of scipy graph calls each, against microseconds of hashing).
    """
    if len(indptr) - 1 > CACHED_STATES:
        return _until_structure(indptr, indices, hold, goal)
    arrays = (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
              np.asarray(hold, dtype=bool), np.asarray(goal, dtype=bool))
    return _cached_structure(*(a.tobytes() for a in arrays))


@lru_cache(maxsize=512)
def _cached_structure(indptr: bytes, indices: bytes, hold: bytes, goal: bytes) -> UntilStructure:
    st = _until_structure(np.frombuffer(indptr, dtype=np.int64), np.frombuffer(indices, dtype=np.int64),
                          np.frombuffer(hold, dtype=bool), np.frombuffer(goal, dtype=bool))
    for a in (st.maybe, st.comp, *st.levels):
        a.flags.writeable = False  # shared by every caller with the same chain
    return st


def _until_structure(indptr: np.ndarray, indices: np.ndarray, hold: np.ndarray, goal: np.ndarray) -> UntilStructure:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = len(indptr) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    active = hold & ~goal
    # backward search from goal, entering only "active" predecessors; node n is a super-source
    sel = active[rows]
    src = np.concatenate([cols[sel], np.full(int(goal.sum()), n)])
    dst = np.concatenate([rows[sel], np.flatnonzero(goal)])
    back = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
    reached = breadth_first_order(back, n, directed=True, return_predecessors=False)
    maybe = np.zeros(n + 1, dtype=bool)
    maybe[reached] = True
    maybe = maybe[:n] & active

    inner = maybe[rows] & maybe[cols]
    r, c = rows[inner], cols[inner]
    sub = csr_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n, n))
    _, comp = connected_components(sub, directed=True, connection="strong")
    comp = np.where(maybe, comp, -1)
    ids, comp = np.unique(comp, return_inverse=True)
    comp = comp - (1 if ids[0] == -1 else 0)
    n_comp = int(comp.max()) + 1 if maybe.any() else 0
    comp[~maybe] = -1
    sizes = np.bincount(comp[maybe], minlength=n_comp)
    cyclic = bool((sizes > 1).any() or (r == c).any())

    cr, cc = comp[r], comp[c]
    cross = cr != cc
    cr, cc = cr[cross], cc[cross]
    outdeg = np.bincount(cr, minlength=n_comp)
    order = np.argsort(cc, kind="stable")
    preds = cr[order]
    pstart = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(np.bincount(cc, minlength=n_comp), out=pstart[1:])
    levels = []
    frontier = np.flatnonzero(outdeg == 0)
    while frontier.size:
        levels.append(frontier)
        starts, stops = pstart[frontier], pstart[frontier + 1]
        take = np.repeat(starts, stops - starts) + (np.arange(int((stops - starts).sum()))
                                                    - np.repeat(np.cumsum(stops - starts) - (stops - starts),
                                                                stops - starts))
        p = preds[take]
        np.subtract.at(outdeg, p, 1)
        frontier = np.unique(p[outdeg[p] == 0])
    return UntilStructure(maybe=maybe, comp=comp, levels=tuple(levels), cyclic=cyclic)
