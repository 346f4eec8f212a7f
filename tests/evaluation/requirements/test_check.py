"""Requirement verdicts on a results document built by hand; reference intervals from scipy's binomtest."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError
from scipy.stats import binomtest

from perception_safety.evaluation.requirements import FAIL, NOT_EVALUATED, PASS, Requirement, check, summary
from perception_safety.evaluation.requirements.config import KnownNames, check_names

REQS = TypeAdapter(list[Requirement])


def exact(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return ci.low, ci.high


def results() -> dict:
    # cm[pred, true], labels ped, obs, empty. Bin 0: ped 8 of 10 found (1 as obs, 1 missed);
    # bin 1: ped 3 of 6 (3 missed), obs 4 of 4; bin 2: no ped, obs 1 of 2.
    b0 = [[8, 0, 0], [1, 5, 0], [1, 0, 7]]
    b1 = [[3, 0, 0], [0, 4, 0], [3, 0, 2]]
    b2 = [[0, 1, 0], [0, 1, 0], [0, 0, 9]]
    pooled = [[11, 1, 0], [1, 10, 0], [4, 0, 18]]
    row = {"variant": "prop", "true_env": "ped", "spec": "phi", "max_speed": 2}
    return {
        "confusion": {
            "class_labels": ["ped", "obs", "empty"],
            "bin_edges": [[0, 10], [10, 20], [20, 30]],
            "class_cm": [b0, b1, b2],
            "class_cm_pooled": pooled,
            "report": {"detections_unannotated_by_class": {"ped": 0, "obs": 3}},
        },
        "verification": {
            "results": [
                {**row, "initial_speed": 1, "probability": 0.95},
                {**row, "initial_speed": 2, "probability": 0.80},
                {**row, "variant": "class", "initial_speed": 2, "probability": 0.70},
            ],
            "skipped": {"obs/prop": "column without samples"},
        },
        "pcd": {
            "pedestrian": {
                "n": 120,
                "pcd": {"y_t": 0.5, "p_t": 0.5, "value": 21.0, "lower": 17.0, "upper": 25.0},
                "grid": {"y_t": [0.3, 0.5], "p_t": [0.5, 0.7], "pcd": [[30.0, 24.0], [21.0, 12.0]]},
                "mpcd": 18.0,
            },
            "car": {"error": "too few samples", "n": 3},
        },
        "returns": {"E2": {"frames": {"SG": 0.10, "RH": 0.07, "AC": 0.01, "hazard_f": 0.17, "n": 500}}},
        "bbsl": {"stop_region": {"table3": {"bbsl": {"T": 90, "F": 10, "rate": 0.9}, "iou_0.6": {"T": 50, "F": 50}}}},
    }


def verdicts(*entries: dict) -> list:
    return check(REQS.validate_python(list(entries)), results(), 0.05)


def test_recall_over_whole_bins_sums_the_counts() -> None:
    lo, hi = exact(11, 16)
    (low, point, high, unmet) = verdicts(
        {"metric": "recall", "class": "ped", "distance": [0, 20], "bound": "lower", "at_least": lo - 1e-6},
        {"metric": "recall", "class": "ped", "distance": [0, 20], "at_least": 11 / 16},
        {"metric": "recall", "class": "ped", "distance": [0, 20], "bound": "upper", "at_most": hi - 1e-6},
        {"metric": "recall", "class": "ped", "distance": [20, 30], "at_least": 0.5},
    )
    assert low.status == PASS and low.value == pytest.approx(lo) and low.n == 16
    assert (low.lower, low.upper) == pytest.approx((lo, hi))
    assert point.status == PASS and point.value == pytest.approx(11 / 16)
    assert high.status == FAIL and high.value == pytest.approx(hi)
    assert unmet.status == NOT_EVALUATED and "no samples" in unmet.detail  # no ped in bin 2


def test_pooled_precision_counts_unmatched_detections() -> None:
    (v,) = verdicts({"metric": "precision", "class": "obs", "bound": "lower", "at_least": 0.4})
    # 10 correct of 11 matched obs detections, plus 3 unmatched obs detections (false positives).
    assert v.n == 14 and v.value == pytest.approx(exact(10, 14)[0]) and v.status == PASS
    assert v.clusters is None  # no per-episode counts: plain Clopper-Pearson


def test_precision_per_bin_without_a_distance_for_unmatched_is_not_evaluated() -> None:
    (v,) = verdicts({"metric": "precision", "class": "obs", "distance": [0, 10], "at_least": 0.5})
    assert v.status == NOT_EVALUATED and "ground_camera" in v.detail


def test_verification_takes_the_worst_matching_row_and_needs_bounds_for_lower() -> None:
    worst, one, no_lower, none_match = verdicts(
        {"metric": "verification", "spec": "phi", "true_env": "ped", "at_least": 0.75},
        {"metric": "verification", "spec": "phi", "variant": "prop", "initial_speed": 2, "at_least": 0.75},
        {"metric": "verification", "spec": "phi", "variant": "prop", "bound": "lower", "at_least": 0.1},
        {"metric": "verification", "spec": "phi", "true_env": "obs", "at_least": 0.1},
    )
    assert worst.status == FAIL and worst.value == 0.70 and "class" in worst.detail
    assert one.status == PASS and one.value == 0.80
    assert no_lower.status == NOT_EVALUATED and "'lower'" in no_lower.detail
    assert none_match.status == NOT_EVALUATED and "skipped: obs/prop" in none_match.detail


def test_verification_lower_bound_when_rows_carry_it() -> None:
    doc = results()
    for r in doc["verification"]["results"]:
        r["lower"], r["upper"] = r["probability"] - 0.1, r["probability"] + 0.01
    reqs = REQS.validate_python([{"metric": "verification", "spec": "phi", "bound": "lower", "at_least": 0.65}])
    (v,) = check(reqs, doc)
    assert v.status == FAIL and v.value == pytest.approx(0.60)


def test_pcd_returns_and_bbsl() -> None:
    head, grid, mpcd, bad, lower_unknown, rh, sg, bbsl, iou = verdicts(
        {"metric": "pcd", "target": "pedestrian", "bound": "lower", "at_least": 20},
        {"metric": "pcd", "target": "pedestrian", "y_t": 0.3, "p_t": 0.7, "at_least": 20},
        {"metric": "pcd", "target": "pedestrian", "name": "mpcd", "at_least": 20},
        {"metric": "pcd", "target": "car", "at_least": 1},
        {"metric": "pcd", "target": "pedestrian", "y_t": 0.3, "p_t": 0.7, "bound": "lower", "at_least": 1},
        {"metric": "returns", "scheme": "E2", "name": "RH", "at_most": 0.05},
        {"metric": "returns", "scheme": "e1", "name": "sg", "at_least": 0.0},
        {"metric": "bbsl", "spec": "stop_region", "name": "pass_rate", "bound": "lower", "at_least": 0.8},
        {"metric": "bbsl", "spec": "stop_region", "name": "iou_0.6", "at_least": 0.6},
    )
    assert head.status == FAIL and head.value == 17.0 and head.n == 120
    assert grid.status == PASS and grid.value == 24.0
    assert mpcd.status == FAIL and mpcd.value == 18.0
    assert bad.status == NOT_EVALUATED and "too few samples" in bad.detail
    assert lower_unknown.status == NOT_EVALUATED
    assert rh.status == FAIL and rh.value == 0.07
    assert sg.status == NOT_EVALUATED  # no E1 block in this run
    assert bbsl.status == PASS and bbsl.value == pytest.approx(exact(90, 100)[0]) and bbsl.n == 100
    assert iou.status == FAIL and iou.value == 0.5


def test_missing_analyses_are_not_evaluated_never_pass() -> None:
    reqs = REQS.validate_python(
        [
            {"metric": "recall", "class": "ped", "at_least": 0.0},
            {"metric": "verification", "spec": "phi", "at_least": 0.0},
            {"metric": "bbsl", "spec": "stop_region", "at_least": 0.0},
        ]
    )
    vs = check(reqs, {"frames": 10})
    assert [v.status for v in vs] == [NOT_EVALUATED] * 3
    block = summary(vs)
    assert block["overall"] == NOT_EVALUATED and block["not_evaluated"] == 3
    assert summary([*vs, *verdicts({"metric": "recall", "class": "ped", "at_least": 0.99})])["overall"] == FAIL
    assert summary(verdicts({"metric": "recall", "class": "ped", "at_least": 0.1}))["overall"] == PASS


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"metric": "accuracy", "at_least": 1}, "metric"),
        ({"metric": "recall", "class": "ped"}, "exactly one of at_least / at_most"),
        ({"metric": "recall", "class": "ped", "at_least": 1, "at_most": 2}, "exactly one"),
        ({"metric": "recall", "class": "ped", "at_least": 1, "bound": "mean"}, "bound"),
        ({"metric": "recall", "class": "ped", "at_least": 1, "distanse": [0, 1]}, "distanse"),
        ({"metric": "recall", "class": "ped", "at_least": 1, "distance": [30, 0]}, "lo < hi"),
        ({"metric": "returns", "scheme": "e3", "name": "rh", "at_most": 1}, "scheme"),
    ],
)
def test_malformed_entries_are_validation_errors(entry: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        REQS.validate_python([entry])


def test_unknown_names_are_reported_with_their_key() -> None:
    known = KnownNames(
        specs=["phi"], variants=["prop"], true_envs=["ped"], max_speeds=[1, 2], classes=["ped", "obs"],
        bin_edges=[0, 10, 20], pcd_targets=["pedestrian"], pcd_y_t=[0.5], pcd_p_t=[0.5],
        bbsl_specs=["stop_region"], bbsl_names=["pass_rate", "iou_0.6"],
    )  # fmt: skip
    reqs = REQS.validate_python(
        [
            {"metric": "verification", "spec": "phy", "variant": "prop", "initial_speed": 3, "at_least": 0.9},
            {"metric": "recall", "class": "pedestrian", "distance": [0, 15], "at_least": 0.8},
            {"metric": "pcd", "target": "ped", "y_t": 0.4, "at_least": 20},
            {"metric": "bbsl", "spec": "stop_region", "name": "iou_0.7", "at_least": 0.5},
            {"metric": "precision", "class": "obs", "distance": [10, 20], "at_least": 0.5},
        ]
    )
    problems = dict(check_names(reqs, known))
    assert set(problems) == {
        "requirements.0.spec", "requirements.0.initial_speed", "requirements.1.class", "requirements.1.distance",
        "requirements.2.target", "requirements.2.y_t", "requirements.3.name",
    }  # fmt: skip
    assert "unknown spec 'phy'; known: phi" in problems["requirements.0.spec"]
    assert "bin edge 15" in problems["requirements.1.distance"]
