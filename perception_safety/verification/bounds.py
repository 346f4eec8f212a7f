"""Lower and upper bounds of P(φ) on an interval DTMC with Storm (IDTMC, MINIMIZE / MAXIMIZE).

Storm 2.0 refuses unbounded until on interval models with a lower bound 0 ("requires graph-preservation")
and has no ``G`` for them. Both are avoided exactly (docs/verification.md, "Bounds"):

1. φ is read as ``P(hold U goal)`` or ``1 − P(hold U goal)`` (`reach.reach_form`); the complement swaps
   the resolution: ``min P(G a) = 1 − max P(F ¬a)``.
2. On the support graph (every transition with a positive upper bound) the states that can reach ``goal``
   through ``hold`` states are ``maybe``; all others have value 0 (or 1 for ``goal``) under every resolution.
   When the maybe states form a DAG (true for the car–pedestrian chain: x never decreases, and the
   self-looping states cannot reach the goal) every path leaves them within ``depth`` steps, so
   ``P(hold U≤depth goal) = P(hold U goal)`` for every resolution and Storm's bounded until is exact.
3. Otherwise (a cycle among maybe states) the bounded value at ``horizon`` steps is a lower bound of both
   extremes and the upper one is widened by the largest probability ``r`` of still being in ``maybe`` after
   ``horizon`` steps (``1 − min P(F≤horizon ¬maybe)``): sound, with ``residual = r`` reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import IntervalChain, interval_storm_model
from perception_safety.verification.reach import ReachForm, form_masks, reach_form, until_structure
from perception_safety.verification.specs import _storm_quiet

DEFAULT_CYCLIC_HORIZON = 10_000


@dataclass(frozen=True)
class SpecBounds:
    """``lower[s] ≤ P(s ⊨ φ) ≤ upper[s]`` over all resolutions of the intervals, for every state ``s``.

    ``horizon``: steps of Storm's bounded until; ``exact``: the maybe states are acyclic so the bounds are the
    exact extremes; ``residual``: how much the bounds were widened (0 when exact).
    """

    lower: np.ndarray
    upper: np.ndarray
    horizon: int
    exact: bool
    residual: float


def _check(model: Any, formula: str, mode: Any) -> np.ndarray:
    import stormpy

    with _storm_quiet():
        try:
            prop = stormpy.parse_properties(formula)[0]
            result = stormpy.model_checking(model, prop, uncertainty_resolution_mode=mode)
        except Exception as exc:  # stormpy raises RuntimeError subclasses with Storm's message
            raise VerificationError(f"Storm failed on the interval model with {formula!r}: {exc}") from exc
    return np.asarray(result.get_value_vector(), dtype=np.float64)


def spec_bounds(chain: IntervalChain, formulas: Mapping[str, str],
                horizon: int | None = None) -> dict[str, SpecBounds | VerificationError]:
    """Bounds of every formula (one Storm IDTMC for all); a formula of unsupported shape maps to its error.

    ``horizon`` is used only for cyclic maybe-graphs (default `DEFAULT_CYCLIC_HORIZON`).
    """
    import stormpy

    n = chain.n_states
    labels: dict[str, np.ndarray] = {}
    plans: dict[str, tuple[ReachForm, int, bool, int]] = {}
    out: dict[str, SpecBounds | VerificationError] = {}
    for i, (name, formula) in enumerate(formulas.items()):
        try:
            form = reach_form(formula)
            hold, goal = form_masks(form, chain.labels, chain.initial_states, n)
        except VerificationError as exc:
            out[name] = exc
            continue
        st = until_structure(chain.indptr, chain.indices, hold, goal)
        steps = st.depth if not st.cyclic else int(horizon or DEFAULT_CYCLIC_HORIZON)
        labels[f"q{i}_hold"], labels[f"q{i}_goal"], labels[f"q{i}_exit"] = hold, goal, ~st.maybe
        plans[name] = (form, i, st.cyclic, steps)
    if not plans:
        return out
    model = interval_storm_model(chain, labels)
    lo_mode, hi_mode = stormpy.UncertaintyResolutionMode.MINIMIZE, stormpy.UncertaintyResolutionMode.MAXIMIZE
    for name, (form, i, cyclic, steps) in plans.items():
        until = f'P=? ["q{i}_hold" U<={steps} "q{i}_goal"]'
        r_min, r_max = _check(model, until, lo_mode), _check(model, until, hi_mode)
        residual = np.zeros(n)
        if cyclic:
            residual = 1.0 - _check(model, f'P=? [F<={steps} "q{i}_exit"]', lo_mode)
        r_max = np.minimum(r_max + residual, 1.0)
        lower, upper = (1.0 - r_max, 1.0 - r_min) if form.negate else (r_min, r_max)
        out[name] = SpecBounds(
            lower=np.clip(lower, 0.0, 1.0), upper=np.clip(upper, 0.0, 1.0), horizon=steps, exact=not cyclic,
            residual=float(residual.max(initial=0.0)),
        )
    return out
