"""Parser: the paper's listings, ASCII/Unicode spellings, positioned errors, and a fuzz test."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perception_safety.bbsl import ast
from perception_safety.bbsl.errors import BBSLError
from perception_safety.bbsl.parser import parse_file, parse_spec
from perception_safety.bbsl.typecheck import check_spec
from perception_safety.errors import PerceptionSafetyError

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "config" / "specs"
DATA = Path(__file__).parent / "data"

LISTING_CASES = {
    "s1_stopping_distance.bbsl": ("stop", "NOT stop"),
    "s2_direction_area.bbsl": ("stop", "NOT stop"),
    "s3_two_cases.bbsl": ("stop", "NOT stop"),
    "s4_four_cases.bbsl": ("x_ystop", "ysafe_xwarning", "xsafe_ywarning", "NOT warning"),
}


@pytest.mark.parametrize("name", sorted(LISTING_CASES))
def test_shipped_listings_parse_and_check(name: str) -> None:
    spec = parse_file(SPECS / name)
    assert tuple(c.name for c in spec.cases) == LISTING_CASES[name]
    assert len(spec.preconditions) == 1
    checked = check_spec(spec)
    assert checked.case_names == LISTING_CASES[name]


def test_listing1_structure() -> None:
    spec = parse_file(SPECS / "s1_stopping_distance.bbsl")
    assert [(d.name, d.type) for d in spec.exfunctions] == [
        ("vehicleExists", ast.Type.BOOL),
        ("vehicle", ast.Type.BB),
        ("stoppingDistance", ast.Type.INTERVAL),
    ]
    pre = spec.preconditions[0]
    assert isinstance(pre, ast.Relation) and pre.op is ast.RelOp.EQ
    assert isinstance(pre.left, ast.Call) and pre.left.name == "vehicleExists"
    stop = spec.cases[0].body
    assert isinstance(stop, ast.Let) and [b.name for b in stop.bindings] == ["vehicle", "stoppingDistance"]
    assert isinstance(stop.body, ast.Or)
    left = stop.body.left
    assert isinstance(left, ast.Relation) and left.op is ast.RelOp.OVERLAPS
    assert isinstance(left.left, ast.Proj) and left.left.axis == "y" and left.left.part == "full"


def test_as_printed_listings_parse() -> None:
    for name in ("s1_as_printed.bbsl", "s3_as_printed.bbsl", "s4_as_printed.bbsl"):
        assert parse_file(DATA / name).cases


def _rel(text: str) -> ast.Relation:
    spec = parse_spec(f"case c\n {text}\nendcase")
    body = spec.cases[0].body
    assert isinstance(body, ast.Relation)
    return body


@pytest.mark.parametrize(
    ("spelling", "op"),
    [
        ("<", ast.RelOp.LT),
        (">", ast.RelOp.GT),
        ("=", ast.RelOp.EQ),
        ("==", ast.RelOp.EQ),
        ("!=", ast.RelOp.NE),
        ("≠", ast.RelOp.NE),
        ("⊆", ast.RelOp.SUBSETEQ),
        ("subseteq", ast.RelOp.SUBSETEQ),
        ("in", ast.RelOp.SUBSETEQ),
        ("≈", ast.RelOp.OVERLAPS),
        ("~=", ast.RelOp.OVERLAPS),
        ("overlaps", ast.RelOp.OVERLAPS),
    ],
)
def test_relation_spellings(spelling: str, op: ast.RelOp) -> None:
    assert _rel(f"PROJ_x(b) {spelling} [1, 2]").op is op


@pytest.mark.parametrize(
    ("word", "part", "axis"),
    [
        ("PROJ_x", "full", "x"),
        ("PROJ_y", "full", "y"),
        ("PROJ_{y}", "full", "y"),
        ("PROJ_x_upper", "upper", "x"),
        ("PROJ_y_max", "upper", "y"),
        ("PROJ_y_lower", "lower", "y"),
        ("PROJ_x_min", "lower", "x"),
    ],
)
def test_projection_spellings(word: str, part: str, axis: str) -> None:
    proj = _rel(f"{word}(b) < 3").left
    assert isinstance(proj, ast.Proj) and (proj.axis, proj.part) == (axis, part)


def test_boolean_spellings_and_precedence() -> None:
    # not binds tighter than and, and tighter than or: a or (b and (not c))
    for text in ("a or b and not c", "a ∨ b ∧ ¬ c", "a || b && ! c"):
        body = parse_spec(f"case c\n {text}\nendcase").cases[0].body
        assert isinstance(body, ast.Or) and isinstance(body.right, ast.And)
        assert isinstance(body.right.right, ast.Not)


def test_literals_comments_and_quoted_case_names() -> None:
    spec = parse_spec('// top\ncase "go on" // trailing\n [-1.5, 2e1] ⊆ 3 // x\nendcase')
    assert spec.cases[0].name == "go on"
    rel = spec.cases[0].body
    assert rel.left == ast.IntervalLit(-1.5, 20.0, rel.left.pos)
    assert isinstance(rel.right, ast.Number) and rel.right.value == 3.0


def test_case_name_with_spaces_and_let_on_same_line() -> None:
    spec = parse_spec("case NOT  stop let x : bool = true in x endcase")
    assert spec.cases[0].name == "NOT stop"
    assert isinstance(spec.cases[0].body, ast.Let)


def test_let_binding_value_with_in_relation_needs_parentheses() -> None:
    spec = parse_spec("case c let t : bool = (PROJ_x(b) in [0, 1]) in t endcase")
    assert spec.cases[0].body.bindings[0].value.op is ast.RelOp.SUBSETEQ


def test_quantifier_and_set_type() -> None:
    spec = parse_spec(
        "exfunction cars():set<bb> others():bbs endexfunction\ncase c exists b in cars() : PROJ_x(b) < 3 endcase"
    )
    assert spec.exfunctions[0].type is ast.Type.BBSET and spec.exfunctions[1].type is ast.Type.BBSET
    q = spec.cases[0].body
    assert isinstance(q, ast.Quant) and q.kind == "exists" and q.var == "b"


def test_syntax_error_has_file_line_column_caret_and_expected() -> None:
    text = "case stop\n  PROJ_y(v) ≈≈ s\nendcase\n"
    with pytest.raises(BBSLError) as info:
        parse_spec(text, "spec.bbsl")
    err = info.value
    assert (err.source, err.line, err.column) == ("spec.bbsl", 2, 14)
    msg = str(err)
    assert msg.startswith("spec.bbsl:2:14: syntax error: unexpected '≈'")
    lines = msg.splitlines()
    assert lines[1] == "      PROJ_y(v) ≈≈ s"
    assert lines[2].index("^") == lines[1].index("≈≈") + 1
    assert "a name" in err.expected and "'['" in err.expected
    assert isinstance(err, PerceptionSafetyError)


def test_unexpected_end_of_input() -> None:
    with pytest.raises(BBSLError) as info:
        parse_spec("case a\n true and", "x.bbsl")
    assert "unexpected end of input" in str(info.value)
    assert info.value.line == 2


def test_keyword_is_reported_as_itself() -> None:
    with pytest.raises(BBSLError) as info:
        parse_spec("case a\n true and\nendcase")
    assert "unexpected 'endcase'" in str(info.value) and info.value.line == 3 and info.value.column == 1


def test_bad_type_lists_the_types() -> None:
    with pytest.raises(BBSLError) as info:
        parse_spec("exfunction f():int endexfunction case a true endcase")
    assert "unexpected 'int'" in str(info.value)
    assert {"'bool'", "'interval'", "'bb'"} <= set(info.value.expected)


def test_inverted_interval_literal_and_non_finite_number() -> None:
    with pytest.raises(BBSLError, match=r"1:8: interval literal \[3, 1\]"):
        parse_spec("case a [3,1] < x endcase")
    with pytest.raises(BBSLError, match="not finite"):
        parse_spec("case a 1e999 < x endcase")


def test_unreadable_file_is_a_bbsl_error(tmp_path: Path) -> None:
    with pytest.raises(BBSLError, match="cannot read"):
        parse_file(tmp_path / "missing.bbsl")


def test_deep_nesting_is_a_bbsl_error() -> None:
    text = "case a " + "(" * 5000 + "true" + ")" * 5000 + " endcase"
    try:
        spec = parse_spec(text)
    except BBSLError:
        return
    check_spec(spec)  # if it parses, checking must not crash either


_TOKENS = [
    "exfunction", "endexfunction", "precondition", "endprecondition", "case", "endcase", "let", "in", ":", ",",
    "=", "bb", "interval", "bool", "set<bb>", "(", ")", "[", "]", "<", ">", "≈", "⊆", "~=", "and", "or", "not",
    "PROJ_x", "PROJ_y_upper", "true", "false", "vehicle", "vehicle()", "1", "-2.5", "[1, 2]", "//c\n", "\n", " ",
    "exists", "forall", "\"q\"", "NOT stop", "1e999", "@", "é",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map(" ".join))
def test_fuzz_token_soup_raises_only_bbsl_error(text: str) -> None:
    try:
        spec = parse_spec(text, "fuzz.bbsl")
        check_spec(spec)
    except BBSLError as err:
        assert err.source == "fuzz.bbsl"


_VALID = (SPECS / "s4_four_cases.bbsl").read_text(encoding="utf-8")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, len(_VALID) - 1), st.integers(0, 8), st.text(max_size=4))
def test_fuzz_mutated_listing_raises_only_bbsl_error(at: int, cut: int, insert: str) -> None:
    text = _VALID[:at] + insert + _VALID[at + cut :]
    try:
        check_spec(parse_spec(text, "mut.bbsl"))
    except BBSLError as err:
        assert err.line is None or err.line >= 1


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_arbitrary_text_raises_only_bbsl_error(text: str) -> None:
    try:
        check_spec(parse_spec(text))
    except BBSLError as err:
        assert str(err).startswith("<spec>")
