"""Syntax tree of a BBSL specification (Section 3, Listings 1-4); every node carries its source position."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Type(enum.Enum):
    """BBSL types (Definitions 1-2): bool, interval, bounding box, and set of bounding boxes."""

    BOOL = "bool"
    INTERVAL = "interval"
    BB = "bb"
    BBSET = "set<bb>"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Pos:
    """1-based line and column of the first character of a node."""

    line: int
    column: int


class RelOp(enum.Enum):
    """Relations on intervals (Definitions 3-6); ``=``, ``≠``, ``⊆``, ``≈`` also apply per axis to bbs."""

    LT = "<"
    GT = ">"
    EQ = "="
    NE = "≠"
    SUBSETEQ = "⊆"
    OVERLAPS = "≈"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    pos: Pos


@dataclass(frozen=True, slots=True)
class IntervalLit:
    lo: float
    hi: float
    pos: Pos


@dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool
    pos: Pos


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a declared (zero-argument) exfunction: ``vehicle()``."""

    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Var:
    """A reference to a ``let`` or quantifier variable."""

    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Proj:
    """``PROJ_axis(arg)`` (Definition 7); ``part`` is ``"full"``, ``"upper"`` or ``"lower"``."""

    axis: str
    part: str
    arg: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Relation:
    op: RelOp
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class And:
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Or:
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Not:
    arg: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    type: Type
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Let:
    """``let b1, ..., bn in body``; each binding sees the ones before it."""

    bindings: tuple[Binding, ...]
    body: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Quant:
    """``forall v in set : body`` or ``exists v in set : body`` over a set of bbs."""

    kind: str
    var: str
    domain: Expr
    body: Expr
    pos: Pos


Expr = Number | IntervalLit | BoolLit | Call | Var | Proj | Relation | And | Or | Not | Let | Quant


@dataclass(frozen=True, slots=True)
class ExFunctionDecl:
    name: str
    type: Type
    pos: Pos


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    body: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed specification: exfunction block, precondition conditions, and cases."""

    exfunctions: tuple[ExFunctionDecl, ...]
    preconditions: tuple[Expr, ...]
    cases: tuple[Case, ...]
    source: str
    text: str
