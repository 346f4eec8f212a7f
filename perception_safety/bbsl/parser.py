"""Parse BBSL text into the syntax tree of `perception_safety.bbsl.ast` (lark LALR(1), `grammar.lark`).

Every failure, whatever the input, is a `BBSLError` naming file, line:column, the
offending text and the expected tokens.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError
from lark.lexer import PatternStr

from perception_safety.bbsl import ast
from perception_safety.bbsl.errors import BBSLError

_FRIENDLY = {
    "NAME": "a name",
    "NUMBER": "a number",
    "CASE_NAME": "a case name",
    "STRING": 'a quoted case name "..."',
    "PROJ": "PROJ_x / PROJ_y",
    "QUANT": "forall / exists",
    "OR": "or",
    "AND": "and",
    "NOT": "not",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    try:
        grammar = resources.files("perception_safety.bbsl").joinpath("grammar.lark").read_text(encoding="utf-8")
    except OSError as exc:  # an install without package data
        raise BBSLError(f"the BBSL grammar is missing from the installation: {exc}", source="grammar.lark") from None
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


def _pretty_terminal(name: str) -> str:
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    try:
        term = _lark().get_terminal(name)
    except KeyError:
        return name
    if isinstance(term.pattern, PatternStr):
        return repr(term.pattern.value)
    return name.lower()


def _pos(meta_or_token) -> ast.Pos:
    return ast.Pos(int(getattr(meta_or_token, "line", 0) or 0), int(getattr(meta_or_token, "column", 0) or 0))


class _Error(Exception):
    """Raised inside the transformer; converted to `BBSLError` with the source attached."""

    def __init__(self, message: str, pos: ast.Pos) -> None:
        super().__init__(message)
        self.pos = pos


def _number(tok: Token) -> float:
    value = float(tok)
    if not math.isfinite(value):
        raise _Error(f"number {tok!s} is not finite", _pos(tok))
    return value


_TYPES = {
    "t_bool": ast.Type.BOOL,
    "t_interval": ast.Type.INTERVAL,
    "t_bb": ast.Type.BB,
    "t_bbset": ast.Type.BBSET,
}
_OPS = {
    "op_lt": ast.RelOp.LT,
    "op_gt": ast.RelOp.GT,
    "op_eq": ast.RelOp.EQ,
    "op_ne": ast.RelOp.NE,
    "op_subseteq": ast.RelOp.SUBSETEQ,
    "op_overlaps": ast.RelOp.OVERLAPS,
}


@v_args(meta=True)
class _ToAst(Transformer):
    """lark parse tree -> `ast` nodes."""

    def __init__(self, source: str, text: str) -> None:
        super().__init__(visit_tokens=False)
        self.source = source
        self.text = text

    def __default__(self, data, children, meta):
        if data in _TYPES:
            return _TYPES[data]
        if data in _OPS:
            return _OPS[data]
        raise _Error(f"internal: unhandled rule {data}", _pos(meta))

    def start(self, meta, children):
        exfs: tuple[ast.ExFunctionDecl, ...] = ()
        pres: tuple[ast.Expr, ...] = ()
        cases = []
        for child in children:
            if isinstance(child, tuple) and child and child[0] == "exfunctions":
                exfs = child[1]
            elif isinstance(child, tuple) and child and child[0] == "preconditions":
                pres = child[1]
            else:
                cases.append(child)
        return ast.Spec(exfs, pres, tuple(cases), self.source, self.text)

    def exfunction_block(self, meta, children):
        return ("exfunctions", tuple(children))

    def exfunction_decl(self, meta, children):
        name, typ = children
        return ast.ExFunctionDecl(str(name), typ, _pos(name))

    def precondition_block(self, meta, children):
        return ("preconditions", tuple(children))

    def condition(self, meta, children):
        return children[0]

    def case_block(self, meta, children):
        (name, pos), body = children
        return ast.Case(name, body, pos)

    def case_name(self, meta, children):
        tok = children[0]
        name = str(tok)
        if tok.type == "STRING":
            name = name[1:-1]
        name = " ".join(name.split())
        if not name:
            raise _Error("empty case name", _pos(tok))
        return (name, _pos(tok))

    def let_expr(self, meta, children):
        *bindings, body = children
        return ast.Let(tuple(bindings), body, _pos(meta))

    def binding(self, meta, children):
        name, typ, value = children
        return ast.Binding(str(name), typ, value, _pos(name))

    def quant_expr(self, meta, children):
        kind_tok, var, domain, body = children
        kind = "forall" if str(kind_tok) in ("forall", "∀") else "exists"
        return ast.Quant(kind, str(var), domain, body, _pos(kind_tok))

    def or_(self, meta, children):
        return _balanced(ast.Or, children)

    def and_(self, meta, children):
        return _balanced(ast.And, children)

    def not_(self, meta, children):
        op, arg = children
        return ast.Not(arg, _pos(op))

    def relation(self, meta, children):
        left, op, right = children
        return ast.Relation(op, left, right, _pos(meta))

    def relop(self, meta, children):
        return children[0]

    def number(self, meta, children):
        return ast.Number(_number(children[0]), _pos(children[0]))

    def interval_literal(self, meta, children):
        lo, hi = (_number(t) for t in children)
        if lo > hi:
            raise _Error(
                f"interval literal [{children[0]}, {children[1]}]: lower bound exceeds upper bound", _pos(meta)
            )
        return ast.IntervalLit(lo, hi, _pos(meta))

    def true(self, meta, children):
        return ast.BoolLit(True, _pos(meta))

    def false(self, meta, children):
        return ast.BoolLit(False, _pos(meta))

    def call(self, meta, children):
        return ast.Call(str(children[0]), _pos(children[0]))

    def var(self, meta, children):
        return ast.Var(str(children[0]), _pos(children[0]))

    def projection(self, meta, children):
        tok, arg = children
        text = str(tok)[len("PROJ_") :]
        axis = text.strip("{}")[0]
        suffix = text.split("_", 1)[1] if "_" in text else ""
        part = {"": "full", "upper": "upper", "max": "upper", "lower": "lower", "min": "lower"}[suffix]
        return ast.Proj(axis, part, arg, _pos(tok))


def _balanced(node: type[ast.And] | type[ast.Or], children: list) -> ast.Expr:
    """Fold ``e0 OP e1 OP e2 ...`` into a balanced tree (and/or are associative); each node keeps its operator's
    position, so errors still point at the right ``and``/``or``."""
    operands, ops = children[0::2], children[1::2]

    def fold(lo: int, hi: int) -> ast.Expr:  # operands[lo:hi], hi - lo >= 1; depth log2(n)
        if hi - lo == 1:
            return operands[lo]
        mid = (lo + hi) // 2
        return node(fold(lo, mid), fold(mid, hi), _pos(ops[mid - 1]))

    return fold(0, len(operands))


_NESTING = re.compile(r"//[^\n]*|\"[^\"\n]*\"|[()\[\]]|\b(?:not|let|forall|exists)\b|[¬∀∃]|!(?!=)|\S")


def _deepest(text: str) -> tuple[int, int, int]:
    """(depth, line, column) of the most deeply nested point: brackets, plus the `let`/quantifier scopes open at
    each bracket level and the current run of `not`s (each nests one level); used to place 'nested too deeply'."""
    depth, run, best = 0, 0, (0, 1, 1)
    scopes = [0]
    for m in _NESTING.finditer(text):
        tok = m.group()
        if tok.startswith(("//", '"')):
            continue
        if tok in "([":
            scopes.append(0)
            run = 0
        elif tok in ")]":
            if len(scopes) > 1:
                scopes.pop()
            run = 0
        elif tok in ("not", "¬", "!"):
            run += 1
        elif tok in ("let", "forall", "exists", "∀", "∃"):
            scopes[-1] += 1
            run = 0
        else:
            run = 0
        depth = len(scopes) + sum(scopes) + run
        if depth > best[0]:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            best = (depth, line, column)
    return best


def nesting_error(text: str, source: str) -> BBSLError:
    depth, line, column = _deepest(text)
    return BBSLError(
        f"expression nested too deeply (about {depth} levels here; and/or chains of any length are fine, "
        "but nested not/let/forall/exists/brackets must stay within a few hundred levels)",
        source=source,
        line=line,
        column=column,
        text=text,
    )


def parse_spec(text: str, source: str = "<spec>") -> ast.Spec:
    """Parse BBSL ``text``; ``source`` names it in errors. Raises only `BBSLError`."""
    if not isinstance(text, str):
        raise BBSLError(f"expected BBSL text, got {type(text).__name__}", source=source)
    try:
        tree = _lark().parse(text)
        return _ToAst(source, text).transform(tree)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text, source) from None
    except VisitError as exc:
        orig = exc.orig_exc
        if isinstance(orig, _Error):
            raise BBSLError(str(orig), source=source, line=orig.pos.line, column=orig.pos.column, text=text) from None
        if isinstance(orig, RecursionError):
            raise nesting_error(text, source) from None
        raise BBSLError(f"cannot build the syntax tree: {orig}", source=source) from None
    except RecursionError:
        raise nesting_error(text, source) from None
    except LarkError as exc:
        raise BBSLError(f"syntax error: {exc}", source=source) from None


def parse_file(path: str | Path) -> ast.Spec:
    """Read and parse a ``.bbsl`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BBSLError(
            f"cannot read specification: {getattr(exc, 'strerror', None) or exc}", source=str(path)
        ) from None
    return parse_spec(text, str(path))


def _syntax_error(exc: UnexpectedInput, text: str, source: str) -> BBSLError:
    if isinstance(exc, UnexpectedEOF):
        lines = text.splitlines() or [""]
        line = len(lines)
        column = len(lines[-1]) + 1
        if text.endswith("\n"):
            line, column = line + 1, 1
        expected = {_pretty_terminal(t) for t in exc.expected}
        return BBSLError(
            "syntax error: unexpected end of input",
            source=source,
            line=line,
            column=column,
            text=text,
            expected=expected,
        )
    if isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else "?"
        expected = {_pretty_terminal(t) for t in (exc.allowed or ())}
        return BBSLError(
            f"syntax error: unexpected character {char!r}",
            source=source,
            line=exc.line,
            column=exc.column,
            text=text,
            expected=expected,
        )
    token = getattr(exc, "token", None)
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None) or ()
    expected = {_pretty_terminal(t) for t in names}
    if token is not None and token.type == "$END":
        lines = text.splitlines() or [""]
        return BBSLError(
            "syntax error: unexpected end of input",
            source=source,
            line=len(lines),
            column=len(lines[-1]) + 1,
            text=text,
            expected=expected,
        )
    shown = str(token).split()[0] if token is not None and str(token).split() else "?"
    shown = shown[:40]
    return BBSLError(
        f"syntax error: unexpected {shown!r}",
        source=source,
        line=getattr(exc, "line", None),
        column=getattr(exc, "column", None),
        text=text,
        expected=expected,
    )
