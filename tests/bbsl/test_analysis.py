"""Spec analysis (Definition 10) with z3: the shipped listings, the listing as printed, broken specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from perception_safety.bbsl import BBSLError, analyse, check_source, load_spec, parse_bindings

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "config" / "specs"
DATA = Path(__file__).parent / "data"
IMAGE = (1242, 375)  # Section 5.1
PAPER = {
    "vehicleExists": "subject_exists",
    "vehicle": "subject",
    "VehicleExists": "subject_exists",
    "Vehicle": "subject",
    "stoppingDistance": [275, 375],
    "directionAreaDistance": [420, 821],
}


def run(source, bindings=None, image=IMAGE):
    return analyse(check_source(source), parse_bindings(PAPER if bindings is None else bindings), image)


@pytest.mark.parametrize(
    "name", ["s1_stopping_distance.bbsl", "s2_direction_area.bbsl", "s3_two_cases.bbsl", "s4_four_cases.bbsl"]
)
def test_shipped_listings_are_exhaustive_exclusionary_non_redundant(name: str) -> None:
    r = run(SPECS / name)
    assert (r.exhaustive, r.exclusionary, r.non_redundant, r.precondition_satisfiable) == (True, True, True, True)
    assert r.counterexamples == {}


@pytest.mark.parametrize("band", [[250, 375], [300, 375]])  # Table 2, test IDs 3 and 4
def test_s1_with_other_stopping_distances(band) -> None:
    r = run(SPECS / "s1_stopping_distance.bbsl", {**PAPER, "stoppingDistance": band})
    assert r.exhaustive and r.exclusionary and r.non_redundant


def test_listing1_as_printed_has_an_unreachable_case() -> None:
    r = run(DATA / "s1_as_printed.bbsl")
    assert r.exhaustive and r.exclusionary
    assert not r.non_redundant
    assert r.counterexamples["non_redundant"] == {"unreachable": ["NOT stop"]}


def _inside(box) -> bool:
    x0, y0, x1, y1 = box
    return 0 <= x0 <= x1 <= IMAGE[0] and 0 <= y0 <= y1 <= IMAGE[1]


def test_overlapping_cases_give_a_box_in_both() -> None:
    text = """
    exfunction v():bb s():interval e():bool endexfunction
    precondition [e() = true] endprecondition
    case near
      not (PROJ_y(v()) < s())
    endcase
    case far
      PROJ_y_lower(v()) < s()
    endcase
    """
    b = {"v": "subject", "e": "subject_exists", "s": [275, 375]}
    r = run(text, b)
    assert r.exhaustive and r.non_redundant and not r.exclusionary
    (w,) = r.counterexamples["exclusionary"]
    assert w["pair"] == ["near", "far"] and sorted(w["cases"]) == ["far", "near"]
    _, y0, _, y1 = w["box"]
    assert _inside(w["box"]) and y0 < 275 <= y1  # independent: top above the band, bottom not above it
    assert set(load_spec(text, b).cases_for_box(w["box"])) == {"near", "far"}


def test_gap_gives_a_box_in_no_case() -> None:
    text = """
    exfunction v():bb s():interval endexfunction
    case inside
      PROJ_y(v()) ⊆ s()
    endcase
    case far
      PROJ_y(v()) < s()
    endcase
    """
    b = {"v": "subject", "s": [275, 375]}
    r = run(text, b)
    assert r.exclusionary and r.non_redundant and not r.exhaustive
    w = r.counterexamples["exhaustive"]
    _, y0, _, y1 = w["box"]
    assert _inside(w["box"]) and w["cases"] == []
    assert not (y0 >= 275 and y1 <= 375) and not (y1 < 275)
    assert load_spec(text, b).cases_for_box(w["box"]) == ()


def test_unreachable_case_and_unsatisfiable_precondition() -> None:
    text = "exfunction v():bb endexfunction\ncase any\n true\nendcase\ncase below\n PROJ_y(v()) > 375\nendcase"
    r = run(text, {"v": "subject"})
    assert r.exhaustive and r.exclusionary and not r.non_redundant
    assert r.counterexamples["non_redundant"]["unreachable"] == ["below"]
    # the same case is reachable in a taller image
    assert run(text, {"v": "subject"}, (1242, 400)).non_redundant
    pre = "exfunction v():bb endexfunction\nprecondition [PROJ_x(v()) > 2000] endprecondition\ncase a\n true\nendcase"
    r = run(pre, {"v": "subject"})
    assert not r.precondition_satisfiable and "precondition" in r.counterexamples


def test_unbound_exfunction_is_symbolic() -> None:
    # holds for every stopping band: S1 is exhaustive and exclusionary whatever the constant
    r = run(SPECS / "s1_stopping_distance.bbsl", {"vehicle": "subject", "vehicleExists": "subject_exists"})
    assert r.exhaustive and r.exclusionary and r.non_redundant
    text = """
    exfunction v():bb s():interval endexfunction
    case inside
      PROJ_y(v()) ⊆ s()
    endcase
    case apart
      not (PROJ_y(v()) ≈ s())
    endcase
    """
    r = run(text, {"v": "subject"})
    assert not r.exhaustive
    w = r.counterexamples["exhaustive"]
    lo, hi = w["exfunctions"]["s"]
    _, y0, _, y1 = w["box"]
    assert lo <= hi
    assert not (lo <= y0 and y1 <= hi) and (lo <= y1 and y0 <= hi)  # overlapping but not inside


def test_sets_are_not_analysable() -> None:
    text = "exfunction all():set<bb> endexfunction\ncase a\n exists b in all() : true\nendcase"
    with pytest.raises(BBSLError, match="set<bb>"):
        run(text, {"all": "frame_boxes"})
