"""Compiled evaluator: the paper's cases on hand-made boxes, relations against Definitions 3-7, and the API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.bbsl import BBSLError, load_spec
from perception_safety.bbsl.interpreter import Interpreter
from perception_safety.core import Box, Detection, Frame

SPECS = Path(__file__).resolve().parents[2] / "config" / "specs"
PAPER = {  # Table 2 (test ID7): sD() = [275, 375], dA() = [420, 821]
    "vehicleExists": "subject_exists",
    "vehicle": "subject",
    "VehicleExists": "subject_exists",
    "Vehicle": "subject",
    "stoppingDistance": [275, 375],
    "directionAreaDistance": [420, 821],
}


def spec(name: str, **over):
    return load_spec(SPECS / name, {**PAPER, **over})


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ((500, 100, 600, 200), ("NOT stop",)),  # wholly above the band: farther than the stopping distance
        ((500, 0, 600, 274.9), ("NOT stop",)),
        ((500, 0, 600, 275), ("stop",)),  # touches the band: closed intervals overlap
        ((500, 250, 600, 300), ("stop",)),  # overlaps
        ((500, 300, 600, 375), ("stop",)),  # inside (nearest)
    ],
)
def test_s1_before_overlapping_after(box, expected) -> None:
    assert spec("s1_stopping_distance.bbsl").cases_for_box(box) == expected


def test_s1_follows_the_bound_constant() -> None:
    box = (500, 200, 600, 260)
    assert spec("s1_stopping_distance.bbsl").cases_for_box(box) == ("NOT stop",)
    assert spec("s1_stopping_distance.bbsl", stoppingDistance=[250, 375]).cases_for_box(box) == ("stop",)


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ((100, 300, 419, 370), ("NOT stop",)),  # left of the direction area
        ((100, 300, 420, 370), ("stop",)),
        ((800, 300, 900, 370), ("stop",)),
        ((821.5, 300, 900, 370), ("NOT stop",)),  # right of it
        ((0, 0, 1242, 10), ("stop",)),  # spanning it
    ],
)
def test_s2_inside_outside_direction_area(box, expected) -> None:
    assert spec("s2_direction_area.bbsl").cases_for_box(box) == expected


@pytest.mark.parametrize(
    ("box", "s3", "s4"),
    [
        ((500, 300, 600, 370), "stop", "x_ystop"),
        ((500, 100, 600, 200), "NOT stop", "ysafe_xwarning"),
        ((100, 300, 200, 370), "NOT stop", "xsafe_ywarning"),
        ((100, 100, 200, 200), "NOT stop", "NOT warning"),
    ],
)
def test_s3_s4_quadrants(box, s3, s4) -> None:
    assert spec("s3_two_cases.bbsl").cases_for_box(box) == (s3,)
    assert spec("s4_four_cases.bbsl").cases_for_box(box) == (s4,)


def test_precondition_follows_subject_existence() -> None:
    s = spec("s1_stopping_distance.bbsl")
    boxes = np.array([[0, 0, 1, 1], [0, 300, 1, 310]], float)
    pre, cases = s.evaluate_boxes(boxes, exists=np.array([True, False]))
    assert pre.tolist() == [True, False]
    assert cases.tolist() == [[False, True], [True, False]]


# ---- relations against the interval-analysis definitions, written independently here ----
REL_SPEC = """
exfunction v():bb a():interval endexfunction
case lt PROJ_x(v()) < a() endcase
case gt PROJ_x(v()) > a() endcase
case eq PROJ_x(v()) = a() endcase
case ne PROJ_x(v()) != a() endcase
case sub PROJ_x(v()) ⊆ a() endcase
case sup a() subseteq PROJ_x(v()) endcase
case ov PROJ_x(v()) ≈ a() endcase
case ov2 a() ~= PROJ_x(v()) endcase
case up PROJ_x_upper(v()) = [PROJ_UP, PROJ_UP] endcase
"""


def _definitions(alo, ahi, blo, bhi):
    return {
        "lt": ahi < blo,  # Definition 3
        "gt": bhi < alo,
        "eq": (alo == blo) & (ahi == bhi),  # Definition 4
        "ne": ~((alo == blo) & (ahi == bhi)),
        "sub": (blo <= alo) & (ahi <= bhi),  # Definition 5
        "sup": (alo <= blo) & (bhi <= ahi),
        "ov": (blo <= ahi) & (alo <= bhi),  # Definition 6
        "ov2": (blo <= ahi) & (alo <= bhi),
    }


@settings(max_examples=40, deadline=None)
@given(st.integers(-5, 5), st.integers(0, 4), st.integers(0, 2**31))
def test_relations_match_definitions_on_random_intervals(lo: int, width: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    a0 = rng.integers(-8, 8, n).astype(float)  # small integer grid: many ties and touching ends
    a1 = a0 + rng.integers(0, 5, n)
    boxes = np.stack([a0, np.zeros(n), a1, np.ones(n)], axis=1)
    up = 3.0
    s = load_spec(REL_SPEC.replace("PROJ_UP", str(up)), {"v": "subject", "a": [lo, lo + width]})
    got = s.cases_for_boxes(boxes)
    want = _definitions(a0, a1, float(lo), float(lo + width))
    for j, name in enumerate(s.case_names[:-1]):
        np.testing.assert_array_equal(got[:, j], want[name], err_msg=name)
    np.testing.assert_array_equal(got[:, -1], a1 == up)  # Definition 7: PROJ_x_upper = [x_max, x_max]


def test_lower_projection_and_bb_relations() -> None:
    text = """
    exfunction v():bb zone():bb endexfunction
    case lower PROJ_y_lower(v()) = 10 endcase
    case inside v() ⊆ zone() endcase
    case touching v() ≈ zone() endcase
    case same v() = zone() endcase
    case differs v() != zone() endcase
    """
    s = load_spec(text, {"v": "subject", "zone": [100, 100, 200, 200]})
    rows = {
        (120, 10, 150, 150): ("lower", "touching", "differs"),
        (120, 120, 150, 150): ("inside", "touching", "differs"),
        (100, 100, 200, 200): ("inside", "touching", "same"),
        (0, 0, 99, 300): ("differs",),  # x apart: no 2-D overlap though y overlaps
        (0, 0, 100, 100): ("touching", "differs"),  # corner contact
    }
    for box, expected in rows.items():
        assert s.cases_for_box(box) == expected, box


def test_image_binding_uses_image_size() -> None:
    s = load_spec(
        "exfunction v():bb img():bb endexfunction case inside v() ⊆ img() endcase",
        {"v": "subject", "img": "image"},
        (100, 50),
    )
    assert s.cases_for_box((0, 0, 100, 50)) == ("inside",)
    assert s.cases_for_box((0, 0, 100, 51)) == ()
    assert s.cases_for_boxes(np.array([[0, 0, 100, 51.0]]), image_size=(100, 60))[0, 0]


QUANT = """
exfunction v():bb all():set<bb> endexfunction
case blocked exists o in all() : (not (o = v()) and PROJ_x(o) ≈ PROJ_x(v()) and PROJ_y(o) > PROJ_y(v()))
endcase
case alone forall o in all() : (o = v() or not (PROJ_x(o) ≈ PROJ_x(v())))
endcase
case pair exists o in all() : (exists p in all() : (not (o = p) and PROJ_y(o) = PROJ_y(p)))
endcase
"""


def test_quantifiers_over_frame_boxes() -> None:
    s = load_spec(QUANT, {"v": "subject", "all": "frame_boxes"})
    boxes = np.array(
        [
            [0, 0, 10, 10],  # far, something nearer (larger y) in its column: blocked
            [5, 20, 15, 30],  # nearest in its column, not alone
            [50, 0, 60, 10],  # alone in its column
        ],
        float,
    )
    cases = s.cases_for_boxes(boxes)
    assert cases[:, 0].tolist() == [True, False, False]
    assert cases[:, 1].tolist() == [False, False, True]
    # boxes 0 and 2 share the y interval [0, 10]: the nested quantifier finds the pair for every subject
    assert cases[:, 2].tolist() == [True, True, True]
    assert not s.cases_for_boxes(boxes[:2])[:, 2].any()
    empty = s.evaluate_boxes(boxes[:1], sets={"all": np.zeros((0, 4))})[1]
    assert empty[0].tolist() == [False, True, False]  # exists over nothing is false, forall true


@pytest.mark.parametrize("name", ["s1_stopping_distance.bbsl", "s2_direction_area.bbsl", "s4_four_cases.bbsl"])
def test_compiled_matches_tree_walking_interpreter(name: str) -> None:
    s = spec(name)
    rng = np.random.default_rng(7)
    xy0 = rng.uniform(0, [1242, 375], (300, 2)).round()
    xy1 = np.minimum(xy0 + rng.uniform(0, 300, (300, 2)).round(), [1242, 375])
    boxes = np.column_stack([xy0, xy1])
    pre, cases = s.evaluate_boxes(boxes)
    interp = Interpreter(s.checked.spec, s.bindings, s.image_size)
    for i, b in enumerate(boxes):
        p, c = interp.run(b)
        assert p == pre[i] and c == cases[i].tolist()


def test_compiled_matches_interpreter_with_quantifiers() -> None:
    s = load_spec(QUANT, {"v": "subject", "all": "frame_boxes"})
    rng = np.random.default_rng(3)
    boxes = rng.integers(0, 6, (12, 4)).astype(float)
    boxes[:, 2:] = boxes[:, :2] + rng.integers(0, 3, (12, 2))
    cases = s.cases_for_boxes(boxes)
    interp = Interpreter(s.checked.spec, s.bindings, s.image_size)
    for i, b in enumerate(boxes):
        assert interp.run(b, True, boxes)[1] == cases[i].tolist()


def test_evaluate_frame_uses_detections_of_the_classes() -> None:
    s = spec("s1_stopping_distance.bbsl")
    frame = Frame(
        stamp_ns=0,
        detections=(
            Detection(Box(0, 300, 10, 320), "car"),
            Detection(Box(0, 10, 10, 20), "pedestrian"),
            Detection(Box(0, 10, 10, 20), "car"),
        ),
    )
    ev = s.evaluate_frame(frame, classes={"car"})
    assert ev.detection_indices.tolist() == [0, 2]
    assert ev.cases_of(0) == ("stop",) and ev.cases_of(1) == ("NOT stop",)
    assert ev.any_case("stop") and ev.any_case("NOT stop")
    none = s.evaluate_frame(np.zeros((0, 4)))
    assert none.cases.shape == (0, 2) and not none.any_case("stop")


def test_missing_and_mistyped_bindings_are_errors() -> None:
    with pytest.raises(BBSLError, match=r"exfunction 'stoppingDistance\(\)' of type interval has no binding"):
        load_spec(SPECS / "s1_stopping_distance.bbsl", {"vehicle": "subject", "vehicleExists": "subject_exists"})
    with pytest.raises(BBSLError, match=r"'stoppingDistance\(\)' is declared interval but its binding gives bb"):
        spec("s1_stopping_distance.bbsl", stoppingDistance=[0, 0, 1, 1])
    with pytest.raises(BBSLError, match=r"\(n, 4\) array"):
        spec("s1_stopping_distance.bbsl").cases_for_boxes(np.zeros((3, 3)))


TABLE_SPEC = """
exfunction v():bb e():bool s():interval img():bb endexfunction
precondition [e() = true] [PROJ_x(v()) ⊆ PROJ_x(img())] endprecondition
case a PROJ_y(v()) ≈ s() and not (PROJ_x_upper(v()) = 3) endcase
case b PROJ_y(v()) < s() or PROJ_x(v()) > [5, 6] or PROJ_y_lower(v()) = 2 endcase
case c (PROJ_x(v()) ⊆ [1, 7] and PROJ_y(v()) != [2, 4]) or e() = false endcase
case d PROJ_x(v()) ≈ [2, 3] and PROJ_x(v()) ≈ [4, 5] endcase
"""


@pytest.mark.parametrize("text", [TABLE_SPEC, (SPECS / "s4_four_cases.bbsl").read_text()])
def test_truth_table_path_equals_generated_code(text: str) -> None:
    s = load_spec(text, {**PAPER, "v": "subject", "e": "subject_exists", "s": [3, 5], "img": "image"}, (8, 9))
    compiled = s.compiled
    assert compiled.table is not None
    assert compiled.table.k > 8 or "x_ystop" in s.case_names  # TABLE_SPEC takes the > 8-bit code path
    rng = np.random.default_rng(11)
    boxes = rng.integers(0, 10, (500, 4)).astype(float)
    boxes[:, 2:] = boxes[:, :2] + rng.integers(0, 4, (500, 2))
    for ex in (np.asarray(True), np.asarray(False), rng.random(500) < 0.5):
        by_table = compiled.table(boxes, ex)
        by_code = compiled.fn(boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], ex, ())
        np.testing.assert_array_equal(by_table[0], np.broadcast_to(by_code[0], (500,)))
        np.testing.assert_array_equal(by_table[1], by_code[1])


def test_large_batches_use_generated_code_with_same_result() -> None:
    s = spec("s4_four_cases.bbsl")
    rng = np.random.default_rng(5)
    xy0 = rng.uniform(0, [1242, 375], (10_000, 2))
    boxes = np.column_stack([xy0, xy0 + rng.uniform(0, 200, (10_000, 2))])
    big = s.cases_for_boxes(boxes)  # above TABLE_MAX_BOXES: column-wise code
    small = np.concatenate([s.cases_for_boxes(boxes[i : i + 1000]) for i in range(0, 10_000, 1000)])
    np.testing.assert_array_equal(big, small)
    assert big.sum(axis=1).tolist() == [1] * 10_000  # exactly one S4 case per box


def test_quantified_spec_has_no_table() -> None:
    assert load_spec(QUANT, {"v": "subject", "all": "frame_boxes"}).compiled.table is None


def test_non_finite_or_inverted_boxes_are_errors() -> None:
    s = spec("s1_stopping_distance.bbsl")
    with pytest.raises(BBSLError, match=r"box 1 \[0.0, nan, 1.0, 1.0\] is NaN or inverted"):
        s.cases_for_boxes(np.array([[0, 0, 1, 1], [0, np.nan, 1, 1]]))
    with pytest.raises(BBSLError, match=r"box 0 .* inverted"):
        s.cases_for_boxes(np.array([[5, 0, 1, 1.0]]))
