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
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from perception_safety.verification.builder import RESERVED_LABELS, MarkovChain
from perception_safety.verification.errors import VerificationError

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


def _environment(precision: float) -> Any:
    """Storm solver settings: SCC-wise (topological) solving; iterative fallbacks stop at ``precision``."""
    import stormpy

    env = stormpy.Environment()
    solver = env.solver()
    solver.set_linear_equation_solver_type(stormpy.environments.EquationSolverType.TOPOLOGICAL)
    solver.native().precision = stormpy.Rational(precision)
    return env


def check(chain: MarkovChain, formula: str, precision: float = 1e-12) -> np.ndarray:
    """``P(s ⊨ φ)`` for every state ``s`` with Storm (LTL or PCTL; ``P=? [...]``)."""
    import stormpy

    known = set(chain.labels) | RESERVED_LABELS
    unknown = sorted(formula_labels(formula) - known)
    if unknown:
        raise VerificationError(f"formula {formula!r} names unknown label(s) {unknown}; known: {sorted(known)}")
    with _storm_quiet():
        try:
            props = stormpy.parse_properties(formula)
        except Exception as exc:  # stormpy raises RuntimeError subclasses with the parser message
            raise VerificationError(f"cannot parse formula {formula!r}: {exc}") from exc
    if len(props) != 1:
        raise VerificationError(f"expected exactly one property in {formula!r}, got {len(props)}")
    model = chain.storm_model()
    with _storm_quiet():
        try:
            result = stormpy.model_checking(model, props[0], environment=_environment(precision))
        except Exception as exc:
            raise VerificationError(f"Storm failed on {formula!r}: {exc}") from exc
    if not _flag(result, "is_quantitative") or not _flag(result, "is_result_for_all_states"):
        raise VerificationError(f"formula {formula!r} must be a quantitative query such as 'P=? [F \"label\"]'")
    return np.asarray(result.get_value_vector(), dtype=np.float64)


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
