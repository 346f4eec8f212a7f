"""Spec analysis (Definition 10) with the z3 SMT solver over all subject boxes inside the image.

For ``S = (C, f)`` and ``dom(f)`` = valuations that satisfy the precondition:
exhaustive ⇔ every valuation has a case; exclusionary ⇔ no valuation has two cases;
non-redundant ⇔ every case has a valuation. The subject box ranges over
``0 <= x_min <= x_max <= W``, ``0 <= y_min <= y_max <= H`` (reals); constant
bindings are fixed; a used exfunction without a binding is a free symbol (an
interval with ``lo <= hi``, a bb inside the image, a bool), so the verdict then
holds for every value of it. A failed property comes with a witness box.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from perception_safety.bbsl.ast import RelOp, Type
from perception_safety.bbsl.bindings import (
    Binding,
    Constant,
    FrameBoxes,
    ImageBox,
    Subject,
    SubjectExists,
    resolve_bindings,
)
from perception_safety.bbsl.errors import BBSLError
from perception_safety.bbsl.typecheck import IR, CheckedSpec, IAnd, IBound, IConst, IExf, INot, IOr, IProj, IQuant, IRel


class AnalysisUnsupportedError(BBSLError):
    """The spec is well-formed but uses a construct the SMT encoding does not cover (sets, quantifiers)."""


@dataclass(frozen=True)
class AnalysisResult:
    """Verdicts of Definition 10 and their counterexamples (JSON-ready via `to_dict`)."""

    cases: tuple[str, ...]
    exhaustive: bool
    exclusionary: bool
    non_redundant: bool
    precondition_satisfiable: bool
    counterexamples: dict[str, Any] = field(default_factory=dict)
    solver_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": list(self.cases),
            "exhaustive": self.exhaustive,
            "exclusionary": self.exclusionary,
            "non_redundant": self.non_redundant,
            "precondition_satisfiable": self.precondition_satisfiable,
            "counterexamples": self.counterexamples,
            "solver_calls": self.solver_calls,
        }


def _real(v: float) -> z3.ArithRef:
    return z3.RealVal(Fraction(v).limit_denominator(10**12) if v != int(v) else int(v))


class _Encoder:
    def __init__(self, bindings: Mapping[str, Binding], exfunctions: Mapping[str, Type], image_size, source: str):
        self.bindings = bindings
        self.exfunctions = exfunctions
        self.w, self.h = (_real(float(image_size[0])), _real(float(image_size[1])))
        self.source = source
        self.domain: list[z3.BoolRef] = []
        self.symbols: dict[str, Any] = {}
        x0, y0, x1, y1 = z3.Reals("subject_x_min subject_y_min subject_x_max subject_y_max")
        self.subject = ((x0, x1), (y0, y1))
        self.domain += [x0 >= 0, x0 <= x1, x1 <= self.w, y0 >= 0, y0 <= y1, y1 <= self.h]
        self.exists = z3.Bool("subject_exists")
        self.uses_exists = False

    def free(self, name: str, typ: Type):
        if name in self.symbols:
            return self.symbols[name]
        if typ is Type.BOOL:
            val: Any = z3.Bool(f"{name}()")
        elif typ is Type.INTERVAL:
            lo, hi = z3.Reals(f"{name}()_lo {name}()_hi")
            self.domain.append(lo <= hi)
            val = (lo, hi)
        elif typ is Type.BB:
            a, b, c, d = z3.Reals(f"{name}()_x_min {name}()_y_min {name}()_x_max {name}()_y_max")
            self.domain += [a >= 0, a <= c, c <= self.w, b >= 0, b <= d, d <= self.h]
            val = ((a, c), (b, d))
        else:
            raise AnalysisUnsupportedError(
                f"analysis: unbound exfunction '{name}()' of type {typ} is not supported", source=self.source
            )
        self.symbols[name] = val
        return val

    def enc(self, node: IR):
        if isinstance(node, IConst):
            return _const(node.type, node.value)
        if isinstance(node, IExf):
            b = self.bindings.get(node.name)
            if b is None:
                return self.free(node.name, node.type)
            if isinstance(b, Constant):
                return _const(b.type, b.value)
            if isinstance(b, Subject):
                return self.subject
            if isinstance(b, SubjectExists):
                self.uses_exists = True
                return self.exists
            if isinstance(b, ImageBox):
                return ((_real(0.0), self.w), (_real(0.0), self.h))
            if isinstance(b, FrameBoxes):
                raise AnalysisUnsupportedError("analysis of set<bb> exfunctions is not supported", source=self.source)
        if isinstance(node, IBound | IQuant):
            raise AnalysisUnsupportedError("analysis of quantifiers over set<bb> is not supported", source=self.source)
        if isinstance(node, IProj):
            bx, by = self.enc(node.arg)
            lo, hi = bx if node.axis == "x" else by
            return {"full": (lo, hi), "upper": (hi, hi), "lower": (lo, lo)}[node.part]
        if isinstance(node, IAnd):
            return z3.And(self.enc(node.left), self.enc(node.right))
        if isinstance(node, IOr):
            return z3.Or(self.enc(node.left), self.enc(node.right))
        if isinstance(node, INot):
            return z3.Not(self.enc(node.arg))
        if isinstance(node, IRel):
            return _relation(node.op, node.operand, self.enc(node.left), self.enc(node.right))
        raise TypeError(f"unknown IR node {node!r}")


def _const(typ: Type, value):
    if typ is Type.BOOL:
        return z3.BoolVal(bool(value))
    if typ is Type.INTERVAL:
        return (_real(value[0]), _real(value[1]))
    x0, y0, x1, y1 = (_real(float(v)) for v in value)
    return ((x0, x1), (y0, y1))


def _relation(op: RelOp, operand: Type, a, b) -> z3.BoolRef:
    if operand is Type.BOOL:
        return a == b if op is RelOp.EQ else a != b
    if operand is Type.BB:
        if op is RelOp.NE:
            return z3.Not(
                z3.And(_relation(RelOp.EQ, Type.INTERVAL, a[0], b[0]), _relation(RelOp.EQ, Type.INTERVAL, a[1], b[1]))
            )
        return z3.And(_relation(op, Type.INTERVAL, a[0], b[0]), _relation(op, Type.INTERVAL, a[1], b[1]))
    (alo, ahi), (blo, bhi) = a, b
    if op is RelOp.LT:  # Definition 3
        return ahi < blo
    if op is RelOp.GT:
        return bhi < alo
    if op is RelOp.EQ:  # Definition 4
        return z3.And(alo == blo, ahi == bhi)
    if op is RelOp.NE:
        return z3.Not(z3.And(alo == blo, ahi == bhi))
    if op is RelOp.SUBSETEQ:  # Definition 5
        return z3.And(blo <= alo, ahi <= bhi)
    return z3.And(blo <= ahi, alo <= bhi)  # Definition 6


def _num(model: z3.ModelRef, term) -> float:
    v = model.eval(term, model_completion=True)
    if z3.is_rational_value(v):
        return float(Fraction(v.numerator_as_long(), v.denominator_as_long()))
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    return float(v.as_decimal(12).rstrip("?"))


def analyse(
    checked: CheckedSpec,
    bindings: Mapping[str, Binding],
    image_size: tuple[float, float],
    timeout_ms: int = 20000,
    budget_s: float = 120.0,
    max_overlaps: int = 10,
) -> AnalysisResult:
    """Decide exhaustiveness, exclusiveness and non-redundancy (Definition 10) of ``checked``.

    The number of solver calls grows linearly with the number of cases, not with its square: exclusiveness is
    one query "at least two cases hold" (plus at most ``max_overlaps`` - 1 more to show further overlapping
    cases), and every model found marks all cases it satisfies as reachable, so non-redundancy only asks about
    cases not yet seen. ``timeout_ms`` bounds one solver call and ``budget_s`` the whole analysis; running out
    of either is an error saying what was decided so far, never a wrong verdict.
    """
    bound = resolve_bindings(
        checked.exfunctions, checked.used_exfunctions, bindings, checked.source, allow_unbound=True
    )
    enc = _Encoder(bound, checked.exfunctions, image_size, checked.source)
    pre = [enc.enc(c) for c in checked.precondition]
    cases = [(name, enc.enc(ir)) for name, ir in checked.cases]
    domain = z3.And(*enc.domain, *pre)
    deadline = time.monotonic() + budget_s
    decided: dict[str, bool] = {}
    calls = 0

    def solve(*extra):
        nonlocal calls
        left_ms = int((deadline - time.monotonic()) * 1000)
        so_far = ", ".join(f"{k} = {v}" for k, v in decided.items()) or "nothing yet"
        if left_ms <= 0:
            raise BBSLError(
                f"analysis: time budget of {budget_s:g} s used up after {calls} solver calls "
                f"({len(cases)} cases); decided so far: {so_far}",
                source=checked.source,
            )
        s = z3.Solver()
        s.set("timeout", min(timeout_ms, left_ms))
        s.add(domain, *extra)
        calls += 1
        r = s.check()
        if r == z3.unknown:
            raise BBSLError(
                f"analysis: the solver gave up ({s.reason_unknown()}) after {calls} calls; decided so far: {so_far}",
                source=checked.source,
            )
        return s.model() if r == z3.sat else None

    def holding(model: z3.ModelRef) -> list[int]:
        return [i for i, (_, c) in enumerate(cases) if z3.is_true(model.eval(c, model_completion=True))]

    def witness(model: z3.ModelRef, true_cases: list[int]) -> dict[str, Any]:
        (x0, x1), (y0, y1) = enc.subject
        out: dict[str, Any] = {"box": [_num(model, t) for t in (x0, y0, x1, y1)]}
        if enc.uses_exists:
            out["subject_exists"] = z3.is_true(model.eval(enc.exists, model_completion=True))
        if enc.symbols:
            ex = {}
            for name, val in enc.symbols.items():
                if isinstance(val, tuple) and isinstance(val[0], tuple):
                    (a, c), (b, d) = val
                    ex[name] = [_num(model, t) for t in (a, b, c, d)]
                elif isinstance(val, tuple):
                    ex[name] = [_num(model, t) for t in val]
                else:
                    ex[name] = _num(model, val)
            out["exfunctions"] = ex
        out["cases"] = [cases[i][0] for i in true_cases]
        return out

    counter: dict[str, Any] = {}
    names = tuple(n for n, _ in cases)
    reached: set[int] = set()
    m = solve()
    if m is None:
        counter["precondition"] = "no box inside the image satisfies the precondition"
        return AnalysisResult(names, True, True, not names, False, counter, calls)
    reached.update(holding(m))
    m = solve(*[z3.Not(c) for _, c in cases])
    exhaustive = m is None
    decided["exhaustive"] = exhaustive
    if m is not None:
        counter["exhaustive"] = witness(m, holding(m))
    overlaps = []
    terms = [c for _, c in cases]
    at_least_two = z3.PbGe([(c, 1) for c in terms], 2) if len(terms) >= 2 else z3.BoolVal(False)
    shown: set[int] = set()
    extra: list[z3.BoolRef] = []
    while len(overlaps) < max_overlaps:
        m = solve(at_least_two, *extra)
        if m is None:
            break
        true_cases = holding(m)
        reached.update(true_cases)
        first = next((i for i in true_cases if i not in shown), true_cases[0])
        second = next(j for j in true_cases if j != first)
        overlaps.append(witness(m, true_cases) | {"pair": [cases[min(first, second)][0], cases[max(first, second)][0]]})
        shown.update(true_cases)
        fresh = [terms[i] for i in range(len(terms)) if i not in shown]
        if not fresh:
            break
        extra = [z3.Or(*fresh)]  # the next overlap involves a case not shown in any earlier one
    decided["exclusionary"] = not overlaps
    if overlaps:
        counter["exclusionary"] = overlaps
    while True:
        unseen = [i for i in range(len(cases)) if i not in reached]
        if not unseen:
            break
        m = solve(z3.Or(*[terms[i] for i in unseen]))
        if m is None:
            break
        reached.update(holding(m))
    unreachable = [name for i, (name, _) in enumerate(cases) if i not in reached]
    if unreachable:
        counter["non_redundant"] = {"unreachable": unreachable}
    return AnalysisResult(names, exhaustive, not overlaps, not unreachable, True, counter, calls)
