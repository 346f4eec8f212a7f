"""Random specs: compiled code, truth table, tree-walking interpreter and z3 analysis must agree."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perception_safety.bbsl import analyse, load_spec
from perception_safety.bbsl.interpreter import Interpreter

W, H = 6, 5
BIND = {"v": "subject", "e": "subject_exists", "s": [1, 3], "img": "image", "z": [2, 1, 4, 3]}
HEADER = "exfunction v():bb e():bool s():interval img():bb z():bb endexfunction\n"

_intervals = st.sampled_from(
    ["PROJ_x(v())", "PROJ_y(v())", "PROJ_x_upper(v())", "PROJ_y_lower(v())", "s()", "[0, 2]", "3", "PROJ_x(z())"]
)
_bbs = st.sampled_from(["v()", "z()", "img()"])
_iops = st.sampled_from(["<", ">", "=", "!=", "⊆", "≈", "in", "~="])
_bops = st.sampled_from(["=", "≈", "⊆", "!="])
_atoms = st.one_of(
    st.builds(lambda a, op, b: f"({a} {op} {b})", _intervals, _iops, _intervals),
    st.builds(lambda a, op, b: f"({a} {op} {b})", _bbs, _bops, _bbs),
    st.sampled_from(["true", "false", "(e() = true)"]),
)
_exprs = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a} and {b})", inner, inner),
        st.builds(lambda a, b: f"({a} or {b})", inner, inner),
        st.builds(lambda a: f"not {a}", inner),
        st.builds(lambda a: f"(let p : interval = PROJ_y(v()) in ({a} or p < [0, 0]))", inner),
    ),
    max_leaves=6,
)


def _grid_boxes() -> np.ndarray:
    rows = [
        (x0, y0, x1, y1)
        for x0, x1 in itertools.combinations_with_replacement(range(W + 1), 2)
        for y0, y1 in itertools.combinations_with_replacement(range(H + 1), 2)
    ]
    return np.array(rows, dtype=float)


GRID = _grid_boxes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_exprs, min_size=1, max_size=3), st.sampled_from(["", "[e() = true]", "[PROJ_x(v()) ⊆ [1, 5]]"]))
def test_random_spec_agrees_everywhere(bodies: list[str], pre: str) -> None:
    text = HEADER
    if pre:
        text += f"precondition {pre} endprecondition\n"
    text += "".join(f"case c{i}\n {body}\nendcase\n" for i, body in enumerate(bodies))
    spec = load_spec(text, BIND, (W, H))
    interp = Interpreter(spec.checked.spec, spec.bindings, spec.image_size)
    compiled = spec.compiled
    ex = np.arange(len(GRID)) % 3 != 0
    by_code = compiled.fn(GRID[:, 0], GRID[:, 1], GRID[:, 2], GRID[:, 3], ex, ())
    pre_code = np.broadcast_to(by_code[0], (len(GRID),))
    if compiled.table is not None:
        by_table = compiled.table(GRID, ex)
        np.testing.assert_array_equal(by_table[0], pre_code)
        np.testing.assert_array_equal(by_table[1], by_code[1])
    for i in range(0, len(GRID), 7):
        p, cases = interp.run(GRID[i], bool(ex[i]))
        assert p == pre_code[i] and cases == by_code[1][i].tolist(), (text, GRID[i])

    # z3 over real boxes vs the integer grid (a subset): sound directions only
    result = analyse(spec.checked, spec.bindings, (W, H))
    pre_all, cases_all = spec.evaluate_boxes(GRID, True)
    inside = cases_all[pre_all]
    if result.exhaustive:
        assert inside.any(axis=1).all()
    if result.exclusionary:
        assert (inside.sum(axis=1) <= 1).all()
    for name in result.counterexamples.get("non_redundant", {}).get("unreachable", []):
        assert not inside[:, spec.case_names.index(name)].any()
    if not result.precondition_satisfiable:
        assert not pre_all.any()
    witnesses = [result.counterexamples.get("exhaustive"), *result.counterexamples.get("exclusionary", [])]
    for w in filter(None, witnesses):
        p, c = spec.evaluate_boxes(np.array([w["box"]]), w.get("subject_exists", True))
        assert p[0]
        assert [n for n, hit in zip(spec.case_names, c[0], strict=True) if hit] == w["cases"]
