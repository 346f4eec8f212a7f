"""Requirements on P(phi) read the verification row's own verdict on the chain's independence assumption
(issue 24 item 9): the memory chain's figures where misses come in runs, INCONCLUSIVE where it cannot be tested."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from perception_safety.evaluation.requirements import FAIL, INCONCLUSIVE, PASS, Requirement, check, summary

REQS = TypeAdapter(list[Requirement])
ROW = {"variant": "prop_by_distance", "true_env": "ped", "spec": "phi", "max_speed": 3, "clusters": 20,
       "status": "ok"}


def doc(*rows: dict) -> dict:
    return {"verification": {"results": [{**ROW, **r} for r in rows]}}


def one(results: dict, **req) -> object:
    (v,) = check(REQS.validate_python([{"metric": "verification", "spec": "phi", **req}]), results)
    return v


def test_memory_rows_are_read_from_the_memory_chain() -> None:
    mem = {"independence": "memory", "memory_probability": 0.62, "memory_lower": 0.55, "memory_upper": 0.7,
           "memory_clusters": 14}
    results = doc(
        {"initial_speed": 1, "probability": 0.95, "lower": 0.92, "upper": 0.97, **mem},
        {"initial_speed": 2, "probability": 0.80, "lower": 0.70, "upper": 0.85, "independence": "independent"},
    )
    v = one(results, bound="lower", at_least=0.6)
    # The worst row is the memory chain's (0.55), not the memoryless 0.92 of the same row nor 0.70.
    assert v.status == FAIL and v.value == pytest.approx(0.55) and v.point == pytest.approx(0.62)
    assert v.clusters == 14 and "observation memory" in v.detail
    assert one(results, bound="lower", at_least=0.5).status == PASS


def test_a_row_inconclusive_on_independence_makes_the_requirement_inconclusive() -> None:
    reason = "prop_by_distance/ped: the independence of consecutive observations cannot be established"
    results = doc(
        {"initial_speed": 1, "probability": 0.99, "lower": 0.98, "upper": 1.0},
        {"initial_speed": 2, "probability": 0.99, "lower": 0.97, "upper": 1.0, "independence": "inconclusive",
         "status": "inconclusive", "inconclusive_reason": reason},
    )
    v = one(results, bound="lower", at_least=0.9)
    assert v.status == INCONCLUSIVE and reason in v.detail  # never PASS, though every bound clears 0.9
    assert summary([v])["overall"] == INCONCLUSIVE
    assert one(results, bound="lower", at_least=0.9, initial_speed=1).status == PASS  # that row is conclusive
