"""Hostile BBSL input (issue 19 item 8): long chains, deep nesting, huge case counts, absurd image sizes."""

from __future__ import annotations

import json

import pytest

from perception_safety.bbsl import BBSLError, analyse, check_source, parse_bindings
from perception_safety.bbsl.parser import parse_spec
from perception_safety.cli import main

HEAD = "exfunction\n    v():bb\nendexfunction\n"
BIND = parse_bindings({"v": "subject"})


def _band(lo: float, hi: float, op: str = "≈") -> str:
    return f"PROJ_y(v()) {op} [{lo:g}, {hi:g}]"


def test_flat_and_chain_of_thousands_of_terms_parses_and_evaluates(tmp_path):
    n = 1000
    chain = " and ".join(_band(0, 100 + i) for i in range(n))  # all hold iff y_min <= 100
    path = tmp_path / "chain.bbsl"
    path.write_text(HEAD + f"case near\n    {chain}\nendcase\ncase far\n    not ({chain})\nendcase\n")
    spec = parse_spec(path.read_text())
    depth, stack = 0, [(spec.cases[0].body, 1)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        stack += [(c, d + 1) for c in (getattr(node, "left", None), getattr(node, "right", None)) if c is not None]
    assert depth <= 15  # balanced: log2(1000) ~ 10 and-levels + the relation, where a left-nested chain is 1000 deep
    assert main(["bbsl", "eval", str(path), "--bind", "v=subject", "--box", "0,50,10,60", "--json"]) == 0


def test_eval_results_of_a_chain(tmp_path, capsys):
    chain = " and ".join(_band(0, 100 + i) for i in range(600))
    path = tmp_path / "c.bbsl"
    path.write_text(HEAD + f"case near\n    {chain}\nendcase\ncase far\n    not ({chain})\nendcase\n")
    args = ["bbsl", "eval", str(path), "--bind", "v=subject", "--box", "0,50,10,60", "--box", "0,150,10,160"]
    assert main([*args, "--json"]) == 0
    assert [r["cases"] for r in json.loads(capsys.readouterr().out)] == [["near"], ["far"]]


def test_deep_not_nesting_is_an_error_with_line_and_column(tmp_path, capsys):
    path = tmp_path / "deep.bbsl"
    path.write_text(HEAD + "case a\n    " + "not " * 3000 + _band(0, 1) + "\nendcase\n")
    assert main(["bbsl", "check", str(path), "--bind", "v=subject"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:5:" in err and "nested too deeply" in err
    shown = err.splitlines()[1]
    assert len(shown) < 120 and shown.strip().startswith("...not not")  # a window around the column, not 12k chars


def test_image_size_must_be_finite(capsys):
    spec = "config/specs/s1_stopping_distance.bbsl"
    for size in ("inf,375", "nan,375", "1e400,375", "0,375"):
        assert main(["bbsl", "eval", spec, "--image-size", size, "--box", "1,2,3,4"]) == 2
        assert "--image-size" in capsys.readouterr().err


def _cases(n: int, step: float, width: float, op: str = "≈") -> str:
    body = (f"case c{i}\n    {_band(i * step, i * step + width, op)}\nendcase" for i in range(n))
    return HEAD + "\n".join(body) + "\n"


def test_analysis_solver_calls_grow_linearly_not_quadratically():
    n = 60
    overlapping = analyse(check_source(_cases(n, 1, 5)), BIND, (1000, 1000), max_overlaps=5)
    assert not overlapping.exclusionary and overlapping.non_redundant
    assert 1 <= len(overlapping.counterexamples["exclusionary"]) <= 5
    for w in overlapping.counterexamples["exclusionary"]:
        assert len(w["cases"]) >= 2 and set(w["pair"]) <= set(w["cases"])
    # pairwise checking needed n(n-1)/2 = 1770 calls; now: 2 + at most 5 + the reachability sweep
    assert overlapping.solver_calls <= 2 + 5 + n
    disjoint = analyse(check_source(_cases(n, 10, 5, "subseteq")), BIND, (1000, 1000))
    assert disjoint.exclusionary and disjoint.non_redundant and not disjoint.exhaustive
    assert disjoint.solver_calls <= 3 + n


def test_analysis_finds_unreachable_cases_among_many():
    text = _cases(30, 10, 5, "subseteq") + "case never\n    PROJ_y(v()) ≈ [2000, 3000]\nendcase\n"
    r = analyse(check_source(text), BIND, (1000, 1000))
    assert r.counterexamples["non_redundant"] == {"unreachable": ["never"]}


def test_analysis_total_time_budget_is_enforced():
    with pytest.raises(BBSLError, match=r"time budget of 0 s used up after 0 solver calls"):
        analyse(check_source(_cases(5, 1, 5)), BIND, (1000, 1000), budget_s=0.0)


def test_thousands_of_cases_evaluate_correctly(tmp_path, capsys):
    n = 3000
    path = tmp_path / "many.bbsl"
    path.write_text(_cases(n, 1, 0.5))  # case i holds iff the box's y-extent meets [i, i + 0.5]
    assert main(["bbsl", "eval", str(path), "--bind", "v=subject", "--box", "0,10.7,5,12.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == ["c11", "c12"]
