"""The seed paper's specifications φ1-φ3 (eqs. 1-3) over the car–pedestrian labels, and checking with Storm.

Label mapping: the paper's stop cell ``C_{k-1}`` is our ``k`` (``stop_at_k`` = stopped there), its
cells ``C_{k-1}..C_N`` are ``at_or_past_k`` and ``C_1..C_{k-2}`` (S3) are ``before_k``:

- φ1 = □(ped ∨ ¬stop_at_k)                       (S1: without a pedestrian, never stop at k)
- φ2 = □(¬ped ∨ ¬at_or_past_k ∨ stop_at_k)       (S2: with a pedestrian, stop at k, never beyond)
- φ3 = □¬(stopped ∧ before_k)                    (S3: never stop before k; eq. 3's "k-1" read as S3's k-2)
- φ = φ1 ∧ φ2 ∧ φ3 as an LTL conjunction, and ``P=? [F stop_at_k]``.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np

from perception_safety.verification.builder import RESERVED_LABELS, MarkovChain
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.storm_batch import Part, Query, Steps, ask, run

PHI1 = 'G ("ped" | !"stop_at_k")'
PHI2 = 'G (!"ped" | !"at_or_past_k" | "stop_at_k")'
PHI3 = 'G !("stopped" & "before_k")'

BUILTIN_SPECS: dict[str, str] = {
    "stop_at_k": 'P=? [F "stop_at_k"]',
    "phi1": f"P=? [{PHI1}]",
    "phi2": f"P=? [{PHI2}]",
    "phi3": f"P=? [{PHI3}]",
    "phi": f"P=? [({PHI1}) & ({PHI2}) & ({PHI3})]",
}
"""Built-in specs by name; ``phi`` is the paper's φ = φ1 ∧ φ2 ∧ φ3 (an LTL conjunction of invariants)."""

_LABEL = re.compile(r'"([^"]*)"')


def formula_labels(formula: str) -> set[str]:
    """Labels a Storm formula names (the quoted atoms)."""
    return set(_LABEL.findall(formula))


def resolve_specs(names: Iterable[str], custom: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map spec names to formulas: built-ins, then user formulas in ``custom``; unknown names are an error."""
    table = {**BUILTIN_SPECS, **(custom or {})}
    out = {}
    for name in names:
        if name not in table:
            raise VerificationError(f"unknown spec {name!r}; known: {sorted(table)}")
        out[name] = table[name]
    return out


@lru_cache(maxsize=32)
def _environment(precision: float, acyclic: bool = False) -> Any:
    """Storm solver settings: SCC-wise (topological) solving, iterative fallbacks stopping at ``precision``; or
    Storm's acyclic solver (one backward pass, exact up to rounding), which refuses a model with a cycle. Made once
    per setting (Storm reads it, never changes it)."""
    import stormpy

    env = stormpy.Environment()
    solver = env.solver()
    kind = stormpy.environments.EquationSolverType
    solver.set_linear_equation_solver_type(kind.ACYCLIC if acyclic else kind.TOPOLOGICAL)
    solver.native().precision = stormpy.Rational(precision)
    return env


@lru_cache(maxsize=256)
def parsed(formula: str) -> tuple[Any, ...]:
    """Storm's properties of ``formula``, parsed once per text (a sweep checks the same few formulas ~800 times;
    a parsed property names labels, not states, so every model can be checked with it). Raises Storm's error."""
    import stormpy

    with _storm_quiet():
        return tuple(stormpy.parse_properties(formula))


_CYCLIC: weakref.WeakSet[Any] = weakref.WeakSet()
"""Chains (and their LTL products) Storm's acyclic solver refused: checked with the topological solver next time."""

_PARTS: weakref.WeakKeyDictionary[MarkovChain, Part] = weakref.WeakKeyDictionary()


def check(chain: MarkovChain, formula: str, precision: float = 1e-12) -> np.ndarray:
    """``P(s ⊨ φ)`` for every state ``s`` with Storm (LTL or PCTL; ``P=? [...]``)."""
    return run(check_steps(chain, formula, precision))


def check_steps(chain: MarkovChain, formula: str, precision: float = 1e-12) -> Steps[np.ndarray]:
    """`check` as a `storm_batch` computation: `storm_batch.run_all` answers many chains' checks in one Storm call."""
    known = set(chain.labels) | RESERVED_LABELS
    unknown = sorted(formula_labels(formula) - known)
    if unknown:
        raise VerificationError(f"formula {formula!r} names unknown label(s) {unknown}; known: {sorted(known)}")
    try:
        props = parsed(formula)
    except Exception as exc:  # stormpy raises RuntimeError subclasses with the parser message
        raise VerificationError(f"cannot parse formula {formula!r}: {exc}") from exc
    if len(props) != 1:
        raise VerificationError(f"expected exactly one property in {formula!r}, got {len(props)}")
    prop = props[0]

    def solo() -> np.ndarray:
        model = chain.storm_model()
        with _storm_quiet():
            try:
                result = _model_check(chain, model, prop, precision)
            except Exception as exc:
                raise VerificationError(f"Storm failed on {formula!r}: {exc}") from exc
        return _values(result, formula)

    def on(model: Any) -> np.ndarray:
        import stormpy

        with _storm_quiet():
            result = stormpy.model_checking(model, prop, environment=_environment(precision, acyclic=True))
        return _values(result, formula)

    if chain not in _PARTS:
        _PARTS[chain] = Part(chain.indptr, chain.indices, chain.data, chain.initial_states, chain.labels,
                             chain.storm_model)
    query = Query(_PARTS[chain], ("point", formula, precision), on, solo, batchable=chain not in _CYCLIC)
    return (yield from ask(query))


def _values(result: Any, formula: str) -> np.ndarray:
    if not _flag(result, "is_quantitative") or not _flag(result, "is_result_for_all_states"):
        raise VerificationError(f"formula {formula!r} must be a quantitative query such as 'P=? [F \"label\"]'")
    return np.asarray(result.get_value_vector(), dtype=np.float64)


def _model_check(chain: MarkovChain, model: Any, prop: Any, precision: float) -> Any:
    """The acyclic solver first (the car-pedestrian chains are acyclic but for absorbing states: 2-3x faster than
    topological, issue 27), the topological one when Storm finds a cycle (in the chain or an LTL product)."""
    import stormpy

    if chain not in _CYCLIC:
        try:
            return stormpy.model_checking(model, prop, environment=_environment(precision, acyclic=True))
        except RuntimeError as exc:
            if "not acyclic" not in str(exc):
                raise
            _CYCLIC.add(chain)
    return stormpy.model_checking(model, prop, environment=_environment(precision))


def _flag(result: Any, name: str) -> bool:
    attr = getattr(result, name, False)
    return bool(attr() if callable(attr) else attr)


@contextmanager
def _storm_quiet() -> Iterator[None]:
    """Silence Storm's own logger (it prints errors to stdout); our exception carries the message instead."""
    try:
        from stormpy import developer

        previous = developer.get_log_level()
        developer.set_log_level(developer.LogLevel.OFF)
    except (ImportError, AttributeError):  # logger control is a developer API; carry on without it
        yield
        return
    try:
        yield
    finally:
        developer.set_log_level(previous)
