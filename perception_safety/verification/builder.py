"""Algorithm 3 of the seed paper: a DTMC from a finite abstract system and P(obs | true env).

``Pr(s, s') = Σ_{y ∈ O(s, s')} μ_k(y, x_e)`` (Definitions 3-4, eqs. 6 and 9) where ``k`` is the
distance bin of ``s``. The chain is assembled as CSR arrays with numpy (one vectorised controller
call per observation outcome, never a Python loop per state) and handed to Storm as binary arrays
(`storm_umb.py`), never through PRISM text.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.verification.errors import VerificationError

ROW_SUM_TOLERANCE = 1e-12
RESERVED_LABELS = frozenset({"init", "deadlock"})

Observation = tuple[str, ...]
"""One observation outcome: the predicted labels (class-labeled: one per object; proposition: the set)."""

Controller = Callable[[np.ndarray, Observation], np.ndarray]
"""``K(states, y) -> successors``: vectorised over an int64 array of state indices."""


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class ObservationModel:
    """``μ_k(y, x_e)`` for one true environment ``x_e``: ``probs[bin, outcome]`` (eqs. 5 and 8).

    ``bin_edges`` are half-open ``[lo, hi)`` metres, one per row of ``probs``; ``None`` means
    pooled (one row, used for every state whatever its distance). ``lower``/``upper`` (same shape as
    ``probs``, optional) bound each ``μ_k(y, x_e)``: the interval chain (`interval_chain.py`) uses them.
    """

    outcomes: tuple[Observation, ...]
    probs: np.ndarray
    bin_edges: tuple[tuple[float, float], ...] | None = None
    source: str = ""
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    def __post_init__(self) -> None:
        outcomes = tuple(tuple(o) for o in self.outcomes)
        object.__setattr__(self, "outcomes", outcomes)
        probs = np.array(self.probs, dtype=np.float64, copy=True)
        where = f"{self.source}: " if self.source else ""
        if probs.ndim == 1:
            probs = probs[None, :]
        if probs.ndim != 2 or probs.shape[1] != len(outcomes):
            raise VerificationError(
                f"{where}observation probabilities: expected shape (bins, {len(outcomes)}), got {probs.shape}"
            )
        bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1 + ROW_SUM_TOLERANCE)
        if bad.any():
            b, o = (int(i) for i in np.argwhere(bad)[0])
            raise VerificationError(
                f"{where}observation probability of {'/'.join(outcomes[o]) or '∅'} in {self._bin_name(b)} "
                f"is {float(probs[b, o])!r}; expected a finite value in [0, 1]"
            )
        if self.bin_edges is None:
            if probs.shape[0] != 1:
                raise VerificationError(f"{where}pooled observation probabilities need one row, got {probs.shape[0]}")
        else:
            edges = tuple((float(lo), float(hi)) for lo, hi in self.bin_edges)
            if len(edges) != probs.shape[0]:
                raise VerificationError(
                    f"{where}{len(edges)} bin edges for {probs.shape[0]} rows of observation probabilities"
                )
            for i, (lo, hi) in enumerate(edges):
                if not (np.isfinite(lo) and not np.isnan(hi) and lo < hi):
                    raise VerificationError(f"{where}bin {i}: invalid edges [{lo}, {hi})")
                if i and lo < edges[i - 1][1]:
                    raise VerificationError(f"{where}bin {i}: [{lo}, {hi}) overlaps or precedes the bin before it")
            object.__setattr__(self, "bin_edges", edges)
        object.__setattr__(self, "probs", _readonly(probs))
        if (self.lower is None) != (self.upper is None):
            raise VerificationError(f"{where}observation intervals need both lower and upper bounds")
        if self.lower is not None and self.upper is not None:
            lo = np.array(self.lower, dtype=np.float64).reshape(probs.shape)
            hi = np.array(self.upper, dtype=np.float64).reshape(probs.shape)
            tol = ROW_SUM_TOLERANCE
            bad = ~(np.isfinite(lo) & np.isfinite(hi)) | (lo < 0) | (hi > 1 + tol)
            bad |= (lo > probs + tol) | (hi < probs - tol)
            if bad.any():
                b, o = (int(i) for i in np.argwhere(bad)[0])
                raise VerificationError(
                    f"{where}interval [{float(lo[b, o])!r}, {float(hi[b, o])!r}] of {'/'.join(outcomes[o]) or '∅'} in "
                    f"{self._bin_name(b)} does not hold its estimate {float(probs[b, o])!r} within [0, 1]"
                )
            object.__setattr__(self, "lower", _readonly(lo))
            object.__setattr__(self, "upper", _readonly(hi))

    @property
    def has_intervals(self) -> bool:
        return self.lower is not None

    @property
    def pooled(self) -> bool:
        return self.bin_edges is None

    def _bin_name(self, b: int) -> str:
        if self.bin_edges is None:
            return "the pooled matrix"
        lo, hi = self.bin_edges[b]
        return f"bin {b} [{lo:g}, {hi:g}) m"

    def bins_of(self, distances: np.ndarray) -> np.ndarray:
        """Bin index of each distance (``[lo, hi)``); -1 where no bin holds it (gap or beyond the edges)."""
        distances = np.asarray(distances, dtype=np.float64)
        if self.bin_edges is None:
            return np.zeros(distances.shape, dtype=np.int64)
        lo = np.array([e[0] for e in self.bin_edges])
        hi = np.array([e[1] for e in self.bin_edges])
        idx = np.searchsorted(lo, distances, side="right") - 1
        safe = np.clip(idx, 0, len(lo) - 1)
        inside = (idx >= 0) & (distances < hi[safe]) & np.isfinite(distances)
        return np.where(inside, idx, -1)


@dataclass(frozen=True, eq=False)
class AbstractSystem:
    """A finite abstract system for Algorithm 3: states ``0..n_states-1`` of agent × (fixed) environment.

    ``controller`` is K (vectorised), ``distance_m`` maps states to the distance (metres) that selects
    the confusion-matrix bin, ``labels`` maps each atomic proposition to a boolean mask over states,
    ``describe`` names a state in error messages.
    """

    n_states: int
    controller: Controller
    distance_m: Callable[[np.ndarray], np.ndarray]
    labels: Mapping[str, np.ndarray]
    initial_states: Sequence[int]
    describe: Callable[[int], str] = str


@dataclass(frozen=True, eq=False)
class MarkovChain:
    """A DTMC ``M = (S, Pr, ι_init, AP, L)`` (Definition 1) as CSR arrays plus boolean label masks."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    labels: Mapping[str, np.ndarray]
    initial_states: np.ndarray
    describe: Callable[[int], str] = field(default=str, compare=False, repr=False)
    _storm: list[Any] = field(default_factory=list, compare=False, repr=False)

    @property
    def n_states(self) -> int:
        return len(self.indptr) - 1

    @property
    def n_transitions(self) -> int:
        return len(self.data)

    def rows(self) -> np.ndarray:
        """Row index of every stored transition (COO form)."""
        return np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.indptr))

    def to_scipy(self) -> Any:
        """The transition matrix as ``scipy.sparse.csr_matrix``."""
        from scipy.sparse import csr_matrix

        n = self.n_states
        return csr_matrix((self.data, self.indices, self.indptr), shape=(n, n))

    def storm_model(self) -> Any:
        """The chain as a ``stormpy`` sparse DTMC (built once, then cached)."""
        if not self._storm:
            self._storm.append(to_storm(self))
        return self._storm[0]


def check_labels(labels: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, mask in labels.items():
        if name in RESERVED_LABELS:
            raise VerificationError(f"label {name!r} is reserved by Storm; choose another name")
        if not name or not all(c.isalnum() or c == "_" for c in name) or name[0].isdigit():
            raise VerificationError(f"label {name!r}: use letters, digits and '_' (not starting with a digit)")
        m = np.asarray(mask)
        if m.dtype != bool or m.shape != (n,):
            raise VerificationError(f"label {name!r}: expected a boolean mask of shape ({n},), got {m.dtype} {m.shape}")
        out[name] = _readonly(m.copy())
    return out


_TABLES: weakref.WeakKeyDictionary[AbstractSystem, dict[Any, tuple[np.ndarray, np.ndarray]]] = (
    weakref.WeakKeyDictionary())


def successor_table(system: AbstractSystem, observations: ObservationModel) -> tuple[np.ndarray, np.ndarray]:
    """``(bins[s], succ[s, j])``: each state's distance bin and its controller successor ``K(s, y_j)``.

    Everything Algorithm 3 needs besides the probabilities; shared by the point chain, the interval chain
    and the posterior (one vectorised controller call per observation outcome). Raises `VerificationError`
    naming the state when a state has no bin or the controller leaves the state space. Kept per system and
    (outcomes, bin edges), read-only: the sweep asks it of one system for the chain, its decision bins, its interval
    chain and its skeleton.
    """
    key = (observations.outcomes, observations.bin_edges)
    tables = _TABLES.setdefault(system, {})
    if key not in tables:
        bins, succ = _successor_table(system, observations)
        tables[key] = (_readonly(bins), _readonly(succ))
    return tables[key]


def _successor_table(system: AbstractSystem, observations: ObservationModel) -> tuple[np.ndarray, np.ndarray]:
    n = int(system.n_states)
    if n <= 0:
        raise VerificationError(f"the system has {n} states; expected at least one")
    states = np.arange(n, dtype=np.int64)
    bins = observations.bins_of(np.asarray(system.distance_m(states), dtype=np.float64))
    if bins.shape != (n,):
        raise VerificationError(f"distance function returned shape {bins.shape}; expected ({n},)")
    missing = np.flatnonzero(bins < 0)
    if missing.size:
        s = int(missing[0])
        d = float(np.asarray(system.distance_m(states[s : s + 1]))[0])
        lo, hi = observations.bin_edges[0][0], observations.bin_edges[-1][1]  # type: ignore[index]
        raise VerificationError(
            f"{observations.source + ': ' if observations.source else ''}no confusion-matrix bin holds distance "
            f"{d:g} m of state {system.describe(s)} (bins cover [{lo:g}, {hi:g}) m; {missing.size} states affected)"
        )

    m = len(observations.outcomes)
    succ_all = np.empty((n, m), dtype=np.int64)
    for j, outcome in enumerate(observations.outcomes):
        succ = np.asarray(system.controller(states, outcome))
        if succ.shape != (n,) or not np.issubdtype(succ.dtype, np.integer):
            raise VerificationError(
                f"controller returned {succ.dtype} {succ.shape} for observation {outcome}; expected int ({n},)"
            )
        out = np.flatnonzero((succ < 0) | (succ >= n))
        if out.size:
            s = int(out[0])
            raise VerificationError(
                f"controller maps state {system.describe(s)} under observation {'/'.join(outcome) or '∅'} "
                f"to {int(succ[s])}, outside the model's {n} states"
            )
        succ_all[:, j] = succ
    return bins, succ_all


def merge_successors(succ: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """O(s, s') per row: sum each ``values[i][s, j]`` over the observations ``j`` with the same successor.

    Returns ``(order, succ_sorted, sums)``: per row the successors sorted (stable), and for each value array
    the sums moved onto the last entry of each run of equal successors (0 elsewhere); rows stay in order,
    columns ascend within a row (CSR order). No global sort.
    """
    order = np.argsort(succ, axis=1, kind="stable")
    succ_sorted = np.take_along_axis(succ, order, axis=1)
    sums = [np.take_along_axis(np.asarray(v, dtype=np.float64), order, axis=1) for v in values]
    for j in range(1, succ.shape[1]):
        same = succ_sorted[:, j] == succ_sorted[:, j - 1]
        for v in sums:
            v[same, j] += v[same, j - 1]
            v[same, j - 1] = 0.0
    return order, succ_sorted, sums


def last_of_run(succ_sorted: np.ndarray) -> np.ndarray:
    """Mask of the entries `merge_successors` keeps: the last of each run of equal successors in a row."""
    keep = np.ones(succ_sorted.shape, dtype=bool)
    keep[:, :-1] = succ_sorted[:, 1:] != succ_sorted[:, :-1]
    return keep


def csr_indptr(rows: np.ndarray, n: int) -> np.ndarray:
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr


def initial_states(system: AbstractSystem) -> np.ndarray:
    n = int(system.n_states)
    init = np.unique(np.asarray(system.initial_states, dtype=np.int64))
    if init.size == 0 or init[0] < 0 or init[-1] >= n:
        raise VerificationError(f"initial states {list(system.initial_states)} are empty or outside 0..{n - 1}")
    return init


def build_chain(system: AbstractSystem, observations: ObservationModel) -> MarkovChain:
    """Algorithm 3: sum ``μ_k(y, x_e)`` over observations ``y`` leading to the same successor.

    Raises `VerificationError` naming the state when a state has no bin, the controller leaves the
    state space, or a row of the chain does not sum to 1 within 1e-12.
    """
    n = int(system.n_states)
    bins, succ_all = successor_table(system, observations)
    _, succ_sorted, (p_all,) = merge_successors(succ_all, observations.probs[bins])  # μ_k(y_j, x_e) per state
    keep = p_all > 0
    rows = np.nonzero(keep)[0]
    cols = succ_sorted[keep]
    vals = p_all[keep]

    sums = np.bincount(rows, weights=vals, minlength=n)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
    if bad.size:
        s = int(bad[0])
        where = observations._bin_name(int(bins[s]))
        raise VerificationError(
            f"{observations.source + ': ' if observations.source else ''}transition probabilities of state "
            f"{system.describe(s)} sum to {float(sums[s])!r}, not 1 (±{ROW_SUM_TOLERANCE:g}); its observations use "
            f"{where} — does the true environment's column have samples there? ({bad.size} states affected)"
        )
    return MarkovChain(
        indptr=_readonly(csr_indptr(rows, n)),
        indices=_readonly(cols),
        data=_readonly(vals),
        labels=check_labels(system.labels, n),
        initial_states=_readonly(initial_states(system)),
        describe=system.describe,
    )


def to_storm(chain: MarkovChain) -> Any:
    """The chain as a ``stormpy`` DTMC: its CSR arrays and labels through Storm's binary UMB archive
    (`storm_umb.py`; stormpy's matrix builder takes Python lists only), plus ``init``."""
    from perception_safety.verification.storm_umb import storm_dtmc

    return storm_dtmc(chain.indptr, chain.indices, chain.data, chain.initial_states, chain.labels)
