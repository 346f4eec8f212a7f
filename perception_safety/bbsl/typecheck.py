"""Type checking of a parsed spec and lowering to a position-free, let-inlined IR.

Typing rules (Section 3, Definitions 1-7): numbers are degenerate intervals
``[n, n]``; ``<`` and ``>`` relate intervals; ``=``/``≠`` relate two values of one
type (bool, interval, bb); ``⊆`` and ``≈`` relate two intervals, or two bbs axis
by axis; ``PROJ_*`` maps a bb to an interval; ``and``/``or``/``not`` take bools;
quantifiers range over a ``set<bb>``. ``let`` variables are inlined, so equal
sub-expressions become equal IR nodes (the evaluator shares them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perception_safety.bbsl import ast
from perception_safety.bbsl.ast import RelOp, Type
from perception_safety.bbsl.errors import BBSLError


# ---- IR ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IConst:
    """A constant: bool, ``(lo, hi)`` for an interval, ``(x_min, y_min, x_max, y_max)`` for a bb."""

    type: Type
    value: object


@dataclass(frozen=True, slots=True)
class IExf:
    """The value of exfunction ``name()`` (bound at compile time, see `bindings`)."""

    name: str
    type: Type


@dataclass(frozen=True, slots=True)
class IBound:
    """The bb bound by the quantifier at nesting ``level`` (1 = outermost)."""

    level: int


@dataclass(frozen=True, slots=True)
class IProj:
    axis: str
    part: str
    arg: IR


@dataclass(frozen=True, slots=True)
class IRel:
    op: RelOp
    operand: Type
    left: IR
    right: IR


@dataclass(frozen=True, slots=True)
class IAnd:
    left: IR
    right: IR


@dataclass(frozen=True, slots=True)
class IOr:
    left: IR
    right: IR


@dataclass(frozen=True, slots=True)
class INot:
    arg: IR


@dataclass(frozen=True, slots=True)
class IQuant:
    kind: str
    level: int
    domain: IR
    body: IR


IR = IConst | IExf | IBound | IProj | IRel | IAnd | IOr | INot | IQuant


@dataclass(frozen=True)
class CheckedSpec:
    """A well-typed spec: declared exfunctions, the precondition conjuncts and the cases as IR."""

    spec: ast.Spec
    exfunctions: dict[str, Type]
    precondition: tuple[IR, ...]
    cases: tuple[tuple[str, IR], ...]
    used_exfunctions: frozenset[str] = field(default_factory=frozenset)

    @property
    def case_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.cases)

    @property
    def source(self) -> str:
        return self.spec.source


_INTERVAL_OPS = {RelOp.LT, RelOp.GT}
_EQ_OPS = {RelOp.EQ, RelOp.NE}


class _Checker:
    def __init__(self, spec: ast.Spec) -> None:
        self.spec = spec
        self.exfunctions: dict[str, Type] = {}
        self.used: set[str] = set()

    def error(self, message: str, pos: ast.Pos) -> BBSLError:
        return BBSLError(message, source=self.spec.source, line=pos.line, column=pos.column, text=self.spec.text)

    def run(self) -> CheckedSpec:
        for decl in self.spec.exfunctions:
            if decl.name in self.exfunctions:
                raise self.error(f"exfunction '{decl.name}()' is declared twice", decl.pos)
            self.exfunctions[decl.name] = decl.type
        pre = tuple(self.expect(cond, {}, 0, Type.BOOL, "a precondition") for cond in self.spec.preconditions)
        cases: list[tuple[str, IR]] = []
        seen: set[str] = set()
        for case in self.spec.cases:
            if case.name in seen:
                raise self.error(f"case '{case.name}' is defined twice", case.pos)
            seen.add(case.name)
            cases.append((case.name, self.expect(case.body, {}, 0, Type.BOOL, f"case '{case.name}'")))
        return CheckedSpec(self.spec, dict(self.exfunctions), pre, tuple(cases), frozenset(self.used))

    def expect(self, expr: ast.Expr, env: dict, depth: int, want: Type, what: str) -> IR:
        typ, ir = self.check(expr, env, depth)
        if typ is not want:
            raise self.error(f"{what} must be {want}, got {typ}", expr.pos)
        return ir

    def check(self, e: ast.Expr, env: dict[str, tuple[Type, IR]], depth: int) -> tuple[Type, IR]:
        if isinstance(e, ast.Number):
            return Type.INTERVAL, IConst(Type.INTERVAL, (e.value, e.value))
        if isinstance(e, ast.IntervalLit):
            return Type.INTERVAL, IConst(Type.INTERVAL, (e.lo, e.hi))
        if isinstance(e, ast.BoolLit):
            return Type.BOOL, IConst(Type.BOOL, e.value)
        if isinstance(e, ast.Call):
            if e.name not in self.exfunctions:
                declared = ", ".join(f"{n}()" for n in self.exfunctions) or "none"
                raise self.error(f"unknown exfunction '{e.name}()' (declared: {declared})", e.pos)
            self.used.add(e.name)
            typ = self.exfunctions[e.name]
            return typ, IExf(e.name, typ)
        if isinstance(e, ast.Var):
            if e.name not in env:
                hint = ""
                if e.name in self.exfunctions:
                    hint = f"; to use the exfunction, call it: {e.name}() or bind it with let"
                raise self.error(f"unknown variable '{e.name}'{hint}", e.pos)
            return env[e.name]
        if isinstance(e, ast.Proj):
            arg = self.expect(e.arg, env, depth, Type.BB, f"the argument of PROJ_{e.axis}")
            return Type.INTERVAL, IProj(e.axis, e.part, arg)
        if isinstance(e, ast.Relation):
            return Type.BOOL, self.relation(e, env, depth)
        if isinstance(e, ast.And | ast.Or):
            word = "and" if isinstance(e, ast.And) else "or"
            left = self.expect(e.left, env, depth, Type.BOOL, f"the left operand of '{word}'")
            right = self.expect(e.right, env, depth, Type.BOOL, f"the right operand of '{word}'")
            return Type.BOOL, (IAnd(left, right) if word == "and" else IOr(left, right))
        if isinstance(e, ast.Not):
            return Type.BOOL, INot(self.expect(e.arg, env, depth, Type.BOOL, "the operand of 'not'"))
        if isinstance(e, ast.Let):
            inner = dict(env)
            for b in e.bindings:
                typ, ir = self.check(b.value, inner, depth)
                if typ is not b.type:
                    raise self.error(f"let '{b.name}' is declared {b.type} but its value is {typ}", b.value.pos)
                inner[b.name] = (b.type, ir)
            return self.check(e.body, inner, depth)
        if isinstance(e, ast.Quant):
            domain = self.expect(e.domain, env, depth, Type.BBSET, f"the domain of '{e.kind}'")
            inner = dict(env)
            inner[e.var] = (Type.BB, IBound(depth + 1))
            body = self.expect(e.body, inner, depth + 1, Type.BOOL, f"the body of '{e.kind}'")
            return Type.BOOL, IQuant(e.kind, depth + 1, domain, body)
        raise self.error(f"internal: unknown node {type(e).__name__}", getattr(e, "pos", ast.Pos(0, 0)))

    def relation(self, e: ast.Relation, env: dict, depth: int) -> IR:
        lt, left = self.check(e.left, env, depth)
        rt, right = self.check(e.right, env, depth)
        op = e.op
        if op in _INTERVAL_OPS:
            ok = lt is Type.INTERVAL and rt is Type.INTERVAL
            need = "two intervals"
        elif op in _EQ_OPS:
            ok = lt is rt and lt is not Type.BBSET
            need = "two values of the same type (bool, interval or bb)"
        else:
            ok = lt is rt and lt in (Type.INTERVAL, Type.BB)
            need = "two intervals or two bbs"
        if not ok:
            raise self.error(f"relation '{op}' needs {need}, got {lt} and {rt}", e.pos)
        return IRel(op, lt, left, right)


def check_spec(spec: ast.Spec) -> CheckedSpec:
    """Type-check ``spec``; raises `BBSLError` at the offending line:column."""
    try:
        return _Checker(spec).run()
    except RecursionError:
        from perception_safety.bbsl.parser import nesting_error

        raise nesting_error(spec.text, spec.source) from None
