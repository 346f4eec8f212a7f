"""Lower and upper bounds of P(φ) on an interval DTMC with Storm (IDTMC, MINIMIZE / MAXIMIZE).

Storm 2.0 refuses unbounded until on interval models with a lower bound 0 ("requires graph-preservation")
and has no ``G`` for them. Both are avoided without approximation (docs/verification.md, "Bounds"):

1. φ is read as ``P(hold U goal)`` or ``1 − P(hold U goal)`` (`reach.reach_form`); the complement swaps
   the resolution: ``min P(G a) = 1 − max P(F ¬a)``.
2. On the support graph (every transition with a positive upper bound) the states that can reach ``goal``
   through ``hold`` states are ``maybe``; all others have value 0 (or 1 for ``goal``) under every resolution.
3. Acyclic maybe states (the car–pedestrian chain: x never decreases, the self-looping states cannot reach
   the goal), fast path: Storm solves the *unbounded* until on the chain with every lower bound 0 lifted to
   ``LIFT`` (graph-preserving, accepted); the candidate ``x`` is then certified against the original
   intervals with one robust Bellman step ``B`` in numpy: on a DAG of depth ``D``,
   ``|x − x*| ≤ D · max|B x − x|``, and the bounds are widened by that (``residual``, ~1e-13).
   If the certificate exceeds ``CERTIFY_TOLERANCE``, exact path: every path leaves the maybe states within
   ``D`` steps, so Storm's bounded until ``hold U≤D goal`` on the original intervals equals the unbounded
   value for every resolution.
4. Cyclic maybe states: the bounded value at ``horizon`` steps is a lower bound of both extremes and the upper
   one is widened by the largest probability ``r`` of still being in ``maybe`` after ``horizon`` steps
   (``1 − min P(F≤horizon ¬maybe)``): sound, with ``residual = r`` reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import IntervalChain, interval_storm_model
from perception_safety.verification.reach import (
    ReachForm,
    UntilStructure,
    form_masks,
    reach_form,
    until_structure,
)
from perception_safety.verification.specs import _storm_quiet, parsed
from perception_safety.verification.storm_batch import Part, Query, Steps, ask, run

DEFAULT_CYCLIC_HORIZON = 10_000
LIFT = 1e-300
CERTIFY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SpecBounds:
    """``lower[s] ≤ P(s ⊨ φ) ≤ upper[s]`` over all resolutions of the intervals, for every state ``s``.

    ``method``: ``certified`` (Storm unbounded on the lifted chain + numpy certificate), ``bounded`` (Storm
    bounded until, exact on a DAG) or ``cyclic`` (bounded until at ``horizon`` + residual); ``exact``: the
    extremes up to ``residual`` (the amount the bounds were widened); ``horizon``: steps of the bounded until
    (0 when not used).
    """

    lower: np.ndarray
    upper: np.ndarray
    horizon: int
    exact: bool
    residual: float
    method: str = "bounded"


def robust_bellman(chain: IntervalChain, x: np.ndarray, maximise: bool) -> np.ndarray:
    """One robust Bellman step: per state, the extreme of ``Σ_t p_t x_t`` over ``lower ≤ p ≤ upper, Σ p = 1``.

    Greedy per row (vectorised): start from the lower bounds, give the remaining mass to the successors in
    order of value (highest first to maximise), each up to its upper bound.
    """
    rows = chain.rows()
    v = x[chain.indices]
    order = np.lexsort((-v if maximise else v, rows))
    lo, slack, v = chain.lower[order], (chain.upper - chain.lower)[order], v[order]
    budget = 1.0 - np.bincount(rows, weights=chain.lower, minlength=chain.n_states)
    before = np.cumsum(slack) - slack
    start = np.minimum(chain.indptr[:-1], max(len(before) - 1, 0))
    before = before - np.repeat(before[start] if len(before) else before, np.diff(chain.indptr))
    add = np.clip(budget[rows] - before, 0.0, slack)
    return np.bincount(rows, weights=(lo + add) * v, minlength=chain.n_states)


def certify(chain: IntervalChain, x: np.ndarray, maybe: np.ndarray, depth: int, maximise: bool) -> float:
    """``D · max_maybe |B x − x|``: how far ``x`` can be from the robust value on an acyclic maybe-graph."""
    if not maybe.any():
        return 0.0
    gap = np.abs(robust_bellman(chain, x, maximise) - x)[maybe]
    return float(depth * gap.max()) if np.all(np.isfinite(gap)) else float("inf")


def _check(model: Any, formula: str, mode: Any) -> np.ndarray:
    try:
        return _raw_check(model, formula, mode)
    except Exception as exc:  # stormpy raises RuntimeError subclasses with Storm's message
        raise VerificationError(f"Storm failed on the interval model with {formula!r}: {exc}") from exc


def _raw_check(model: Any, formula: str, mode: Any) -> np.ndarray:
    import stormpy

    with _storm_quiet():
        prop = parsed(formula)[0]
        result = stormpy.model_checking(model, prop, uncertainty_resolution_mode=mode, environment=_min_max_env())
    return np.asarray(result.get_value_vector(), dtype=np.float64)


@lru_cache(maxsize=1)
def _min_max_env() -> Any:
    import stormpy

    env = stormpy.Environment()
    env.solver().min_max().precision = stormpy.Rational(1e-14)
    return env


def _query(part: Part, formula: str, mode: Any) -> Steps[np.ndarray]:
    """One interval check as a `storm_batch` computation (answered with other chains' in `storm_batch.run_all`)."""
    query = Query(part, ("interval", formula, str(mode)), lambda model: _raw_check(model, formula, mode),
                  lambda: _check(part.model(), formula, mode))
    return (yield from ask(query))


def spec_bounds(chain: IntervalChain, formulas: Mapping[str, str],
                horizon: int | None = None) -> dict[str, SpecBounds | VerificationError]:
    """Bounds of every formula; a formula of unsupported shape maps to its error (never a guessed number).

    ``horizon`` is used only for cyclic maybe-graphs (default `DEFAULT_CYCLIC_HORIZON`).
    """
    return run(spec_bounds_steps(chain, formulas, horizon))


def spec_bounds_steps(chain: IntervalChain, formulas: Mapping[str, str],
                      horizon: int | None = None) -> Steps[dict[str, SpecBounds | VerificationError]]:
    """`spec_bounds` as a `storm_batch` computation."""
    import stormpy

    n = chain.n_states
    labels: dict[str, np.ndarray] = {}
    plans: dict[str, tuple[ReachForm, int, UntilStructure, np.ndarray]] = {}
    out: dict[str, SpecBounds | VerificationError] = {}
    for i, (name, formula) in enumerate(formulas.items()):
        try:
            form = reach_form(formula)
            hold, goal = form_masks(form, chain.labels, chain.initial_states, n)
        except VerificationError as exc:
            out[name] = exc
            continue
        st = until_structure(chain.indptr, chain.indices, hold, goal)
        labels[f"q{i}_hold"], labels[f"q{i}_goal"], labels[f"q{i}_exit"] = hold, goal, ~st.maybe
        plans[name] = (form, i, st, goal)
    if not plans:
        return out
    parts: dict[str, Part] = {}

    def model(kind: str) -> Part:
        if kind not in parts:
            ic = chain if kind == "original" else replace(chain, lower=np.maximum(chain.lower, LIFT))
            parts[kind] = Part(ic.indptr, ic.indices, np.column_stack([ic.lower, ic.upper]), ic.initial_states,
                               labels, lambda ic=ic: interval_storm_model(ic, labels))
        return parts[kind]

    modes = (stormpy.UncertaintyResolutionMode.MINIMIZE, stormpy.UncertaintyResolutionMode.MAXIMIZE)
    liftable = bool(np.all(np.bincount(chain.rows(), weights=np.maximum(chain.lower, LIFT), minlength=n) <= 1.0))
    for name, (form, i, st, goal) in plans.items():
        reach, method, steps, residual = [], "certified", 0, 0.0
        if not st.cyclic and liftable:
            for mode in modes:
                x = yield from _query(model("lifted"), f'P=? ["q{i}_hold" U "q{i}_goal"]', mode)
                x = np.where(st.maybe, x, 0.0)
                x[goal] = 1.0
                reach.append(x)
            errors = [certify(chain, x, st.maybe, st.depth, mode == modes[1]) for x, mode in zip(reach, modes,
                                                                                                strict=True)]
            residual = max(errors)
            if residual <= CERTIFY_TOLERANCE:
                reach = [np.clip(reach[0] - residual, 0.0, 1.0), np.clip(reach[1] + residual, 0.0, 1.0)]
            else:
                reach = []
        if not reach:
            method, steps = ("bounded", st.depth) if not st.cyclic else ("cyclic", int(horizon or
                                                                                       DEFAULT_CYCLIC_HORIZON))
            until = f'P=? ["q{i}_hold" U<={steps} "q{i}_goal"]'
            reach = []
            for mode in modes:
                reach.append((yield from _query(model("original"), until, mode)))
            residual = 0.0
            if st.cyclic:
                left = 1.0 - (yield from _query(model("original"), f'P=? [F<={steps} "q{i}_exit"]', modes[0]))
                reach[1] = np.minimum(reach[1] + left, 1.0)
                residual = float(left.max(initial=0.0))
        r_min, r_max = reach
        lower, upper = (1.0 - r_max, 1.0 - r_min) if form.negate else (r_min, r_max)
        out[name] = SpecBounds(
            lower=np.clip(lower, 0.0, 1.0), upper=np.clip(upper, 0.0, 1.0), horizon=steps,
            exact=not st.cyclic, residual=residual, method=method,
        )
    return out
