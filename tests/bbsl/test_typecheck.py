"""Type checker: unknown names, type errors at line:column, let inlining."""

from __future__ import annotations

from pathlib import Path

import pytest

from perception_safety.bbsl.ast import RelOp, Type
from perception_safety.bbsl.errors import BBSLError
from perception_safety.bbsl.parser import parse_file, parse_spec
from perception_safety.bbsl.typecheck import IAnd, IConst, IExf, IProj, IRel, check_spec

DATA = Path(__file__).parent / "data"
DECL = "exfunction v():bb e():bool s():interval cars():set<bb> endexfunction\n"


def _check(body: str):
    return check_spec(parse_spec(DECL + f"case c\n  {body}\nendcase\n", "t.bbsl"))


def test_listing3_as_printed_names_the_unbound_variable() -> None:
    with pytest.raises(BBSLError) as info:
        check_spec(parse_file(DATA / "s3_as_printed.bbsl"))
    err = info.value
    assert "unknown variable 'stoppingDistance'" in str(err)
    assert "stoppingDistance()" in str(err)  # the hint to call the exfunction
    text = (DATA / "s3_as_printed.bbsl").read_text().splitlines()
    assert text[err.line - 1][err.column - 1 :].startswith("stoppingDistance)")


def test_unknown_exfunction_is_named() -> None:
    with pytest.raises(BBSLError, match=r"t.bbsl:3:10: unknown exfunction 'w\(\)' \(declared: v\(\), e\(\)"):
        _check("PROJ_x(w()) < s()")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("v() < s()", "relation '<' needs two intervals, got bb and interval"),
        ("e() ≈ e()", "relation '≈' needs two intervals or two bbs, got bool and bool"),
        ("v() = s()", "relation '=' needs two values of the same type"),
        ("PROJ_x(s()) < s()", "the argument of PROJ_x must be bb, got interval"),
        ("s() and e()", "the left operand of 'and' must be bool, got interval"),
        ("s()", "case 'c' must be bool, got interval"),
        ("let x : interval = v() in true", "let 'x' is declared interval but its value is bb"),
        ("exists b in v() : true", "the domain of 'exists' must be set<bb>, got bb"),
        ("cars() = cars()", "needs two values of the same type"),
    ],
)
def test_type_errors(body: str, message: str) -> None:
    with pytest.raises(BBSLError, match=r"^t\.bbsl:3:") as info:
        _check(body)
    assert message in str(info.value)


def test_duplicates_are_errors() -> None:
    with pytest.raises(BBSLError, match="case 'a' is defined twice"):
        check_spec(parse_spec("case a true endcase\ncase a false endcase"))
    with pytest.raises(BBSLError, match=r"exfunction 'f\(\)' is declared twice"):
        check_spec(parse_spec("exfunction f():bb f():bool endexfunction case a true endcase"))


def test_let_is_inlined_and_sequential() -> None:
    checked = _check("let a : bb = v(), p : interval = PROJ_y(a) in p ≈ s() and p < 3")
    ir = checked.cases[0][1]
    proj = IProj("y", "full", IExf("v", Type.BB))
    assert ir == IAnd(
        IRel(RelOp.OVERLAPS, Type.INTERVAL, proj, IExf("s", Type.INTERVAL)),
        IRel(RelOp.LT, Type.INTERVAL, proj, IConst(Type.INTERVAL, (3.0, 3.0))),
    )
    assert checked.used_exfunctions == {"v", "s"}


def test_let_variable_shadows_and_scopes() -> None:
    # the inner x is the bool; outside its let the name is unknown again
    _check("let x : bb = v() in let x : bool = e() in x")
    with pytest.raises(BBSLError, match="unknown variable 'x'"):
        _check("(let x : bool = e() in x) and x")


def test_listing4_as_printed_names_the_unbound_vehicle() -> None:
    with pytest.raises(BBSLError) as info:
        check_spec(parse_file(DATA / "s4_as_printed.bbsl"))
    assert "unknown variable 'vehicle'" in str(info.value)
    assert (info.value.line, info.value.column) == (30, 16)  # first use, in case ysafe_xwarning
