"""Compile a checked spec to numpy code: one call evaluates the precondition and every case for n subject boxes.

The IR (let-inlined, shared sub-expressions evaluated once) is translated to the
source of one Python function over the subject's coordinate columns and folded
against the constant bindings, so ``PROJ_y(vehicle()) ≈ [275, 375]`` becomes
``(275.0 <= y1) & (y0 <= 375.0)``. The same function serves the vectorised path
(1M boxes in one call) and the per-frame path (tens of boxes, microseconds).
Quantifiers over a ``set<bb>`` broadcast over an extra trailing axis per level.
Semantics are Definitions 3-7 of the paper on closed intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perception_safety.bbsl.ast import RelOp, Type
from perception_safety.bbsl.bindings import Binding, Constant, FrameBoxes, ImageBox, Subject, SubjectExists
from perception_safety.bbsl.typecheck import IR, CheckedSpec, IAnd, IBound, IConst, IExf, INot, IOr, IProj, IQuant, IRel

# A scalar is a float constant or the code of a numpy expression; a bool is a Python bool or code.
Scalar = float | str
BoolVal = bool | str


@dataclass
class _Gen:
    bindings: Mapping[str, Binding]
    image_size: tuple[float, float]
    lines: list[str] = field(default_factory=list)
    memo: dict = field(default_factory=dict)
    set_args: dict[str, str] = field(default_factory=dict)
    n_tmp: int = 0

    def tmp(self, code: str) -> str:
        name = f"t{self.n_tmp}"
        self.n_tmp += 1
        self.lines.append(f"    {name} = {code}")
        return name

    def leaf(self, code: str, depth: int) -> str:
        """A subject-shaped array expanded with ``depth`` trailing axes (for quantifier broadcasting)."""
        if depth == 0:
            return code
        key = ("leaf", code, depth)
        if key not in self.memo:
            self.memo[key] = self.tmp(f"{code}[(...,{' None,' * depth})]")
        return self.memo[key]

    # ---- boolean algebra with constant folding ----
    def b_and(self, a: BoolVal, b: BoolVal) -> BoolVal:
        if a is False or b is False:
            return False
        if a is True:
            return b
        if b is True:
            return a
        return self.tmp(f"{a} & {b}")

    def b_or(self, a: BoolVal, b: BoolVal) -> BoolVal:
        if a is True or b is True:
            return True
        if a is False:
            return b
        if b is False:
            return a
        return self.tmp(f"{a} | {b}")

    def b_not(self, a: BoolVal) -> BoolVal:
        if isinstance(a, bool):
            return not a
        return self.tmp(f"~{a}")

    def cmp(self, a: Scalar, op: str, b: Scalar) -> BoolVal:
        if isinstance(a, float) and isinstance(b, float):
            return {"<": a < b, "<=": a <= b, "==": a == b}[op]
        return self.tmp(f"{_lit(a)} {op} {_lit(b)}")

    # ---- IR -> value ----
    def value(self, node: IR, depth: int, ctx: tuple[str, ...]):
        key = (node, depth, ctx)
        if key not in self.memo:
            self.memo[key] = self._value(node, depth, ctx)
        return self.memo[key]

    def _value(self, node: IR, depth: int, ctx: tuple[str, ...]):
        if isinstance(node, IConst):
            return _const(node.type, node.value)
        if isinstance(node, IExf):
            return self.exfunction(node, depth)
        if isinstance(node, IBound):
            s = ctx[node.level - 1]
            pad = "[:" + ", None" * (depth - node.level) + "]" if depth > node.level else ""
            cols = [self.tmp(f"{s}[:, {j}]{pad}") for j in range(4)]
            return ((cols[0], cols[2]), (cols[1], cols[3]))
        if isinstance(node, IProj):
            bx, by = self.value(node.arg, depth, ctx)
            lo, hi = bx if node.axis == "x" else by
            if node.part == "upper":
                return (hi, hi)
            if node.part == "lower":
                return (lo, lo)
            return (lo, hi)
        if isinstance(node, IRel):
            return self.relation(node, depth, ctx)
        if isinstance(node, IAnd):
            return self.b_and(self.value(node.left, depth, ctx), self.value(node.right, depth, ctx))
        if isinstance(node, IOr):
            return self.b_or(self.value(node.left, depth, ctx), self.value(node.right, depth, ctx))
        if isinstance(node, INot):
            return self.b_not(self.value(node.arg, depth, ctx))
        if isinstance(node, IQuant):
            s = self.value(node.domain, depth, ctx)
            body = self.value(node.body, depth + 1, (*ctx, s))
            if node.kind == "exists":
                return self.tmp(f"_np.any(_np.logical_and({_lit(body)}, _np.ones(len({s}), bool)), axis=-1)")
            return self.tmp(f"_np.all(_np.logical_or({_lit(body)}, _np.zeros(len({s}), bool)), axis=-1)")
        raise TypeError(f"unknown IR node {node!r}")

    def exfunction(self, node: IExf, depth: int):
        binding = self.bindings[node.name]
        if isinstance(binding, Constant):
            return _const(binding.type, binding.value)
        if isinstance(binding, Subject):
            x0, y0, x1, y1 = (self.leaf(c, depth) for c in ("x0", "y0", "x1", "y1"))
            return ((x0, x1), (y0, y1))
        if isinstance(binding, SubjectExists):
            return self.leaf("ex", depth)
        if isinstance(binding, ImageBox):
            w, h = self.image_size
            return _const(Type.BB, (0.0, 0.0, float(w), float(h)))
        if isinstance(binding, FrameBoxes):
            if node.name not in self.set_args:
                self.set_args[node.name] = f"sets[{len(self.set_args)}]"
            return self.set_args[node.name]
        raise TypeError(f"unknown binding {binding!r}")

    def relation(self, node: IRel, depth: int, ctx: tuple[str, ...]) -> BoolVal:
        a = self.value(node.left, depth, ctx)
        b = self.value(node.right, depth, ctx)
        op = node.op
        if node.operand is Type.BOOL:
            if isinstance(a, bool) and isinstance(b, bool):
                same = a == b
            elif isinstance(a, bool) or isinstance(b, bool):
                const, other = (a, b) if isinstance(a, bool) else (b, a)
                same = other if const else self.b_not(other)
            else:
                same = self.tmp(f"{a} == {b}")
            return same if op is RelOp.EQ else self.b_not(same)
        if node.operand is Type.BB:
            parts = [self.interval_rel(RelOp.EQ if op is RelOp.NE else op, a[i], b[i]) for i in (0, 1)]
            both = self.b_and(parts[0], parts[1])
            return self.b_not(both) if op is RelOp.NE else both
        return self.interval_rel(op, a, b)

    def interval_rel(self, op: RelOp, a, b) -> BoolVal:
        (alo, ahi), (blo, bhi) = a, b
        if op is RelOp.LT:  # Definition 3
            return self.cmp(ahi, "<", blo)
        if op is RelOp.GT:
            return self.cmp(bhi, "<", alo)
        if op in (RelOp.EQ, RelOp.NE):  # Definition 4
            eq = self.b_and(self.cmp(alo, "==", blo), self.cmp(ahi, "==", bhi))
            return eq if op is RelOp.EQ else self.b_not(eq)
        if op is RelOp.SUBSETEQ:  # Definition 5
            return self.b_and(self.cmp(blo, "<=", alo), self.cmp(ahi, "<=", bhi))
        if op is RelOp.OVERLAPS:  # Definition 6
            return self.b_and(self.cmp(blo, "<=", ahi), self.cmp(alo, "<=", bhi))
        raise TypeError(f"unknown relation {op}")


def _lit(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v) if v == v else "float('nan')"
    return v


def _const(typ: Type, value):
    if typ is Type.BOOL:
        return bool(value)
    if typ is Type.INTERVAL:
        return (float(value[0]), float(value[1]))
    if typ is Type.BB:
        x0, y0, x1, y1 = (float(v) for v in value)
        return ((x0, x1), (y0, y1))
    raise TypeError(f"no constant of type {typ}")


@dataclass(frozen=True)
class CompiledSpec:
    """The generated evaluator of one spec under fixed bindings.

    ``fn(x0, y0, x1, y1, ex, sets)`` returns ``(precondition (n,), cases (n, k))`` for
    subject columns of length n, ``ex`` the subject-exists flags and ``sets`` the
    ``set<bb>`` arrays in `set_names` order.
    """

    case_names: tuple[str, ...]
    set_names: tuple[str, ...]
    source_code: str
    fn: object

    def __call__(self, x0, y0, x1, y1, ex, sets: Sequence[np.ndarray] = ()):
        return self.fn(x0, y0, x1, y1, ex, sets)


def compile_spec(
    checked: CheckedSpec, bindings: Mapping[str, Binding], image_size: tuple[float, float]
) -> CompiledSpec:
    """Generate and compile the numpy evaluator of ``checked`` (bindings already resolved and type-checked)."""
    gen = _Gen(bindings, image_size)
    pre: BoolVal = True
    for cond in checked.precondition:
        pre = gen.b_and(pre, gen.value(cond, 0, ()))
    case_vals = [gen.value(ir, 0, ()) for _, ir in checked.cases]
    k = len(case_vals)
    body = list(gen.lines)
    body.append("    n = len(x0)")
    body.append(f"    out = _np.empty(({k}, n), dtype=bool)")
    for i, v in enumerate(case_vals):
        body.append(f"    out[{i}] = {_lit(v)}")
    body.append("    pre = _np.empty(n, dtype=bool)")
    body.append(f"    pre[:] = {_lit(pre)}")
    body.append("    return pre, out.T")
    source = "def _bbsl_eval(x0, y0, x1, y1, ex, sets):\n" + "\n".join(body) + "\n"
    namespace: dict = {"_np": np}
    exec(compile(source, f"<bbsl {checked.source}>", "exec"), namespace)  # generated from the typed IR only
    set_names = tuple(gen.set_args)  # insertion order = argument order
    return CompiledSpec(checked.case_names, set_names, source, namespace["_bbsl_eval"])
