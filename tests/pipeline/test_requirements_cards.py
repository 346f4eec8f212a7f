"""Summary cards coloured by the requirements that refer to them; a requirement without a card gets one."""

from __future__ import annotations

from pydantic import TypeAdapter

from perception_safety.evaluation.requirements import Requirement, check
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.analyses.requirements import colour_cards
from perception_safety.report.html import Metric, Report


def test_cards_take_the_worst_verdict_of_their_requirements() -> None:
    report = Report("t")
    report.summary = [
        Metric("recall 'ped' (pooled)", 0.5),
        Metric("worst P(phi | ped), prop", 0.2),
        Metric("worst P(phi | ped), class", 0.3),
        Metric("PCD 'pedestrian'", "not computed"),
        Metric("RH (E2, per frame)", 0.07),
        Metric("mPCD 'pedestrian' (hurdle)", 9.0),
    ]
    ev = Evaluation(results={}, report=report)
    reqs = TypeAdapter(list[Requirement]).validate_python(
        [
            {"metric": "recall", "class": "ped", "at_least": 0.4},  # PASS
            {"metric": "verification", "spec": "phi", "true_env": "ped", "at_least": 0.25},  # FAIL on 'prop', own card
            {"metric": "verification", "spec": "phi", "variant": "prop", "true_env": "ped", "at_least": 0.1},
            {"metric": "verification", "spec": "phi", "variant": "class", "true_env": "ped", "at_least": 0.25},
            {"metric": "pcd", "target": "pedestrian", "at_least": 20},  # NOT EVALUATED
            {"metric": "returns", "scheme": "e2", "name": "rh", "at_most": 0.05},  # FAIL
            {"metric": "pcd", "target": "pedestrian", "name": "mpcd", "at_least": 20},  # NOT EVALUATED
            {"id": "near", "metric": "recall", "class": "ped", "distance": [0, 10], "at_least": 0.1},  # own card
        ]
    )
    results = {
        "confusion": {
            "class_labels": ["ped", "obs", "empty"],
            "bin_edges": [[0, 10]],
            "class_cm": [[[5, 0, 0], [0, 0, 0], [5, 0, 1]]],
            "class_cm_pooled": [[5, 0, 0], [0, 0, 0], [5, 0, 1]],
        },
        "verification": {
            "results": [
                {"spec": "phi", "true_env": "ped", "variant": v, "max_speed": 1, "initial_speed": 1, "probability": p}
                for v, p in (("prop", 0.2), ("class", 0.3))
            ]
        },
        "pcd": {"pedestrian": {"error": "too few samples", "n": 4}},
        "returns": {"E2": {"frames": {"RH": 0.07, "n": 9}}},
    }
    colour_cards(ev, reqs, check(reqs, results))
    verdicts = {m.label: m.verdict for m in report.summary}
    assert verdicts == {
        "recall 'ped' (pooled)": "good",
        "worst P(phi | ped), prop": "good",
        "worst P(phi | ped), class": "good",
        "verification(spec=phi, true_env=ped)": "bad",  # over several variants: its own card
        "PCD 'pedestrian'": "na",
        "RH (E2, per frame)": "bad",
        "mPCD 'pedestrian' (hurdle)": "na",
        "near": "good",
    }


def test_a_verification_requirement_shows_its_speed_in_metres_per_second_when_the_step_is_known():
    from perception_safety.evaluation.requirements.check import Verdict
    from perception_safety.pipeline.analyses.requirements import _speed
    from perception_safety.pipeline.evaluate_config import EvaluateConfig

    v = Verdict("P(phi) at v0 = 3", "verification", {"initial_speed": 3}, "lower", ">=", 0.9, "FAIL", 0.1, 0.2,
                0.1, 0.3, None)
    cfg = EvaluateConfig.model_validate({"verification": {"geometry": {"cell_length_m": 2.0}, "plot": {"step_s": 0.5}}})
    assert _speed(v, cfg) == " (v0 = 3 cells/step = 12 m/s)"  # 3 cells x 2 m / 0.5 s
    assert _speed(v, EvaluateConfig()) == ""  # no time step: no m/s (the section says how to get it)
