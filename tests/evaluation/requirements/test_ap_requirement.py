"""Requirements on AP (``metric: ap``): pooled or one bin, point or bootstrap bound; names checked."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from perception_safety.evaluation.requirements import FAIL, NOT_EVALUATED, PASS, Requirement, check
from perception_safety.evaluation.requirements.config import KnownNames, check_names

REQS = TypeAdapter(list[Requirement])


def _cell(ap: float | None, lo: float | None, hi: float | None, n: int) -> dict:
    return {"ap": ap, "ap_lower": lo, "ap_upper": hi, "ap50": None if ap is None else ap + 0.2, "ap50_lower": None,
            "ap50_upper": None, "ap75": ap, "ap75_lower": None, "ap75_upper": None, "ground_truth": n,
            "interval_note": "95 % percentile bootstrap over 8 episodes"}  # fmt: skip


RESULTS = {
    "detection_ap": {
        "ped": {
            "pooled": _cell(0.55, 0.48, 0.61, 120),
            "bins": {"[0, 10)": _cell(0.7, 0.6, 0.8, 60), "[10, 20)": _cell(None, None, None, 0)},
        }
    }
}


def _status(entry: dict, results: dict = RESULTS) -> tuple[str, float | None]:
    (v,) = check(REQS.validate_python([entry]), results)
    return v.status, v.value


def test_pooled_point_and_lower_bound() -> None:
    assert _status({"metric": "ap", "class": "ped", "at_least": 0.5}) == (PASS, 0.55)
    assert _status({"metric": "ap", "class": "ped", "bound": "lower", "at_least": 0.5}) == (FAIL, 0.48)
    assert _status({"metric": "ap", "class": "ped", "name": "ap50", "at_least": 0.7}) == (PASS, pytest.approx(0.75))


def test_one_bin_and_what_cannot_be_judged() -> None:
    assert _status({"metric": "ap", "class": "ped", "distance": [0, 10], "bound": "upper", "at_most": 0.85}) == (
        PASS, 0.8,
    )  # fmt: skip
    assert _status({"metric": "ap", "class": "ped", "distance": [10, 20], "at_least": 0.1})[0] == NOT_EVALUATED
    assert _status({"metric": "ap", "class": "ped", "name": "ap50", "bound": "lower", "at_least": 0.1})[0] == (
        NOT_EVALUATED  # no interval: never a PASS
    )
    assert _status({"metric": "ap", "class": "ped", "at_least": 0.1}, {})[0] == NOT_EVALUATED


def test_names_checked_and_distance_must_be_one_bin() -> None:
    reqs = REQS.validate_python([
        {"metric": "ap", "class": "pedestrian", "at_least": 0.5},
        {"metric": "ap", "class": "ped", "distance": [0, 20], "at_least": 0.5},
        {"metric": "ap", "class": "ped", "distance": [10, 20], "at_least": 0.5},
    ])  # fmt: skip
    problems = check_names(reqs, KnownNames(classes=["ped"], bin_edges=[0.0, 10.0, 20.0]))
    assert [k for k, _ in problems] == ["requirements.0.class", "requirements.1.distance"]
    assert "AP is per bin" in problems[1][1]
