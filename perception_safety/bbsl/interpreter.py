"""A plain-Python, tree-walking interpretation of a spec's syntax tree, one subject box at a time.

It shares nothing with the compiled evaluator but the syntax tree: it is the
baseline of the benchmark and a second, independent reading of the semantics
(Definitions 3-7 on closed intervals) for the tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perception_safety.bbsl import ast
from perception_safety.bbsl.bindings import Binding, Constant, FrameBoxes, ImageBox, Subject, SubjectExists


class Interpreter:
    """Evaluate ``spec`` for one subject: ``run(box, exists, frame_boxes) -> (precondition, [case bools])``."""

    def __init__(self, spec: ast.Spec, bindings: Mapping[str, Binding], image_size: tuple[float, float]) -> None:
        self.spec = spec
        self.bindings = bindings
        self.image_size = image_size

    def run(self, box: Sequence[float], exists: bool = True, frame_boxes: Sequence[Sequence[float]] = ()):
        self.box = ((box[0], box[2]), (box[1], box[3]))
        self.exists = exists
        self.frame_boxes = [((b[0], b[2]), (b[1], b[3])) for b in frame_boxes]
        pre = all(self.eval(c, {}) for c in self.spec.preconditions)
        return pre, [bool(self.eval(c.body, {})) for c in self.spec.cases]

    def eval(self, e, env: dict):
        if isinstance(e, ast.Number):
            return (e.value, e.value)
        if isinstance(e, ast.IntervalLit):
            return (e.lo, e.hi)
        if isinstance(e, ast.BoolLit):
            return e.value
        if isinstance(e, ast.Var):
            return env[e.name]
        if isinstance(e, ast.Call):
            b = self.bindings[e.name]
            if isinstance(b, Constant):
                v = b.value
                if b.type is ast.Type.BB:
                    return ((v[0], v[2]), (v[1], v[3]))
                return v
            if isinstance(b, Subject):
                return self.box
            if isinstance(b, SubjectExists):
                return self.exists
            if isinstance(b, ImageBox):
                return ((0.0, float(self.image_size[0])), (0.0, float(self.image_size[1])))
            if isinstance(b, FrameBoxes):
                return self.frame_boxes
        if isinstance(e, ast.Proj):
            bx, by = self.eval(e.arg, env)
            lo, hi = bx if e.axis == "x" else by
            return {"full": (lo, hi), "upper": (hi, hi), "lower": (lo, lo)}[e.part]
        if isinstance(e, ast.And):
            return self.eval(e.left, env) and self.eval(e.right, env)
        if isinstance(e, ast.Or):
            return self.eval(e.left, env) or self.eval(e.right, env)
        if isinstance(e, ast.Not):
            return not self.eval(e.arg, env)
        if isinstance(e, ast.Let):
            inner = dict(env)
            for binding in e.bindings:
                inner[binding.name] = self.eval(binding.value, inner)
            return self.eval(e.body, inner)
        if isinstance(e, ast.Quant):
            items = self.eval(e.domain, env)
            test = (self.eval(e.body, {**env, e.var: item}) for item in items)
            return any(test) if e.kind == "exists" else all(test)
        if isinstance(e, ast.Relation):
            return _relation(e.op, self.eval(e.left, env), self.eval(e.right, env))
        raise TypeError(f"cannot interpret {type(e).__name__}")


def _relation(op: ast.RelOp, a, b) -> bool:
    if isinstance(a, bool):
        return (a == b) if op is ast.RelOp.EQ else (a != b)
    if isinstance(a[0], tuple):  # bb: per axis
        if op is ast.RelOp.NE:
            return not (_relation(ast.RelOp.EQ, a[0], b[0]) and _relation(ast.RelOp.EQ, a[1], b[1]))
        return _relation(op, a[0], b[0]) and _relation(op, a[1], b[1])
    (alo, ahi), (blo, bhi) = a, b
    if op is ast.RelOp.LT:
        return ahi < blo
    if op is ast.RelOp.GT:
        return bhi < alo
    if op is ast.RelOp.EQ:
        return alo == blo and ahi == bhi
    if op is ast.RelOp.NE:
        return not (alo == blo and ahi == bhi)
    if op is ast.RelOp.SUBSETEQ:
        return blo <= alo and ahi <= bhi
    return blo <= ahi and alo <= bhi
