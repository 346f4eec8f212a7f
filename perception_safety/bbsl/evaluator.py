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

import sys
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
    # atom mode: comparisons of a subject coordinate with a constant (and `ex`) become inputs a[i]
    atom_mode: bool = False
    atoms: list[tuple] = field(default_factory=list)
    atom_index: dict[tuple, int] = field(default_factory=dict)

    def tmp(self, code: str) -> str:
        name = f"t{self.n_tmp}"
        self.n_tmp += 1
        self.lines.append(f"    {name} = {code}")
        return name

    def leaf(self, code: str, depth: int) -> str:
        """A subject-shaped array expanded with ``depth`` trailing axes (for quantifier broadcasting)."""
        if self.atom_mode:
            if depth:
                raise _NoTableError
            return self.atom(("ex",)) if code == "ex" else "@" + code
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
        if self.atom_mode:
            if not (isinstance(a, float) or isinstance(b, float)):
                raise _NoTableError  # coordinate against coordinate
            if isinstance(a, float):  # c op col  ->  col op' c
                a, b, op = b, a, {"<": ">", "<=": ">=", "==": "=="}[op]
            return self.atom(("cmp", _COLS.index(a[1:]), op, b))
        return self.tmp(f"{_lit(a)} {op} {_lit(b)}")

    def atom(self, key: tuple) -> str:
        index = self.atom_index.get(key)
        if index is None:
            index = self.atom_index[key] = len(self.atoms)
            self.atoms.append(key)
        return f"a[{index}]"

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
        if isinstance(node, IBound | IQuant) and self.atom_mode:
            raise _NoTableError
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
            if self.atom_mode:
                raise _NoTableError
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


_COLS = ("x0", "y0", "x1", "y1")
# Up to this many boxes the truth-table path is faster (fewer numpy calls); above it the
# generated column-wise code is (contiguous element-wise work, no gathers).
TABLE_MAX_BOXES = 4096


class _NoTableError(Exception):
    """The spec is not a boolean function of coordinate-vs-constant comparisons."""


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


_LITTLE_ENDIAN = sys.byteorder == "little"
_PACK_MAGIC = np.uint64(0x0102040810204080)
_PACK_SHIFT = np.uint64(56)
_GROUP_OPS = {"<=": np.less_equal, "<": np.less, "==": np.equal}
# col OP c  ->  (sign, group, threshold sign): ``sign * col GROUP sign * c``
_NORMAL = {"<=": (1.0, "<="), "<": (1.0, "<"), "==": (1.0, "=="), ">=": (-1.0, "<="), ">": (-1.0, "<")}


@dataclass(frozen=True)
class TableSpec:
    """A spec that is a boolean function of k coordinate-vs-constant comparisons (and ``subject_exists``).

    The comparisons are computed in a few grouped numpy operations, packed into a
    k-bit code per box, and the precondition and cases are looked up in truth tables
    of 2^k rows precomputed from the generated code: a handful of numpy calls per
    frame, whatever the size of the spec.
    """

    cols: np.ndarray
    signs: np.ndarray | None
    groups: tuple[tuple[slice, object, np.ndarray], ...]
    uses_ex: bool
    k: int
    weights: np.ndarray
    pre_table: np.ndarray
    case_table: np.ndarray

    def __call__(self, b: np.ndarray, ex: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.cols)
        n = len(b)
        if m:
            v = b.take(self.cols, axis=1)
            if self.signs is not None:
                np.multiply(v, self.signs, out=v)
            if m <= 8 and _LITTLE_ENDIAN:
                # eight 0/1 bytes per row read as one uint64; the multiply gathers byte j into bit j
                a = np.zeros((n, 8), dtype=bool)
                for sl, op, t in self.groups:
                    op(v[:, sl], t, out=a[:, sl])
                code = ((a.view(np.uint64)[:, 0] * _PACK_MAGIC) >> _PACK_SHIFT).view(np.int64)
            else:
                a = np.empty(v.shape, dtype=bool)
                for sl, op, t in self.groups:
                    op(v[:, sl], t, out=a[:, sl])
                code = a.view(np.uint8) @ self.weights
        else:
            code = np.zeros(n, dtype=np.int64)
        if self.uses_ex:
            if ex.ndim == 0:  # one flag for all rows: look up in the half of the tables it selects
                half = slice(1 << m, 2 << m) if ex else slice(0, 1 << m)
                return self.pre_table[half].take(code), self.case_table[half].take(code, axis=0)
            code = code + (ex.astype(np.int64) << m)
        return self.pre_table.take(code), self.case_table.take(code, axis=0)


def compile_table(checked: CheckedSpec, bindings: Mapping[str, Binding], image_size, max_atoms: int = 16):
    """The `TableSpec` of ``checked``, or None when it has quantifiers, coordinate-vs-coordinate
    comparisons or more than ``max_atoms`` distinct comparisons."""
    gen = _Gen(bindings, image_size, atom_mode=True)
    try:
        pre: BoolVal = True
        for cond in checked.precondition:
            pre = gen.b_and(pre, gen.value(cond, 0, ()))
        case_vals = [gen.value(ir, 0, ()) for _, ir in checked.cases]
    except _NoTableError:
        return None
    atoms = gen.atoms
    if len(atoms) > max_atoms:
        return None
    normal = []
    for i, atom in enumerate(atoms):
        if atom[0] == "cmp":
            _, col, op, c = atom
            sign, group = _NORMAL[op]
            normal.append((("<=", "<", "==").index(group), i, col, sign, group, sign * c))
    normal.sort()
    order = [n[1] for n in normal]
    ex_atoms = [i for i, atom in enumerate(atoms) if atom[0] == "ex"]
    position = {atom_i: pos for pos, atom_i in enumerate(order + ex_atoms)}
    k = len(atoms)
    cols = np.array([n[2] for n in normal], dtype=np.intp)
    signs = np.array([n[3] for n in normal])
    groups = []
    for g, name in enumerate(("<=", "<", "==")):
        idx = [j for j, n in enumerate(normal) if n[0] == g]
        if idx:
            thresholds = np.array([normal[j][5] for j in idx])
            groups.append((slice(idx[0], idx[-1] + 1), _GROUP_OPS[name], thresholds))
    rows = 1 << k
    bits = (np.arange(rows)[:, None] >> np.arange(max(k, 1))) & 1
    a = [bits[:, position[i]].astype(bool) for i in range(k)]
    lines = list(gen.lines)
    source = "def _bbsl_atoms(a):\n" + "\n".join(lines) + "\n"
    source += f"    return {_lit(pre)}, [{', '.join(_lit(v) for v in case_vals)}]\n"
    namespace: dict = {"_np": np}
    exec(compile(source, f"<bbsl table {checked.source}>", "exec"), namespace)
    pre_v, case_v = namespace["_bbsl_atoms"](a)
    pre_table = np.empty(rows, dtype=bool)
    pre_table[:] = pre_v
    case_table = np.empty((rows, len(case_v)), dtype=bool)
    for j, v in enumerate(case_v):
        case_table[:, j] = v
    return TableSpec(
        cols=cols,
        signs=None if np.all(signs > 0) else signs,
        groups=tuple(groups),
        uses_ex=bool(ex_atoms),
        k=k,
        weights=(1 << np.arange(len(cols))).astype(np.int64),
        pre_table=pre_table,
        case_table=case_table,
    )


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
    table: TableSpec | None = None

    def __call__(self, x0, y0, x1, y1, ex, sets: Sequence[np.ndarray] = ()):
        return self.fn(x0, y0, x1, y1, ex, sets)

    def evaluate(self, boxes: np.ndarray, ex, sets: Sequence[np.ndarray] = ()) -> tuple[np.ndarray, np.ndarray]:
        """``(precondition, cases)`` for an ``(n, 4)`` float64 array, by truth table when possible."""
        if type(ex) is not np.ndarray or ex.dtype != bool:
            ex = np.asarray(ex, dtype=bool)
        if self.table is not None and len(boxes) <= TABLE_MAX_BOXES:
            return self.table(boxes, ex)
        return self.fn(boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], ex, sets)


def compile_spec(
    checked: CheckedSpec, bindings: Mapping[str, Binding], image_size: tuple[float, float], use_table: bool = True
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
    table = compile_table(checked, bindings, image_size) if use_table else None
    return CompiledSpec(checked.case_names, set_names, source, namespace["_bbsl_eval"], table)
