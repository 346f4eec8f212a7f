"""The issue-24 examples end to end: frames with episodes -> confusion counts -> results document -> verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import TypeAdapter

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.io import to_json_dict
from perception_safety.evaluation.requirements import FAIL, INCONCLUSIVE, PASS, Requirement, check, summary

CFG = ConfusionConfig(classes={"ped": ["ped"]}, bin_edges=[0, 10, 20])
PED = Box(100, 100, 140, 200)
RECALL = {"metric": "recall", "class": "ped", "bound": "lower", "at_least": 0.8}
PRECISION = {"metric": "precision", "class": "ped", "bound": "lower", "at_least": 0.95}


def frame(t: int, episode: str, detected: bool, ghost: bool = False) -> Frame:
    dets = (Detection(PED, "ped"),) if detected else ()
    if ghost:
        dets += (Detection(Box(500, 100, 540, 200), "ped"),)
    return Frame(t, dets, (GroundTruthObject(PED, "ped", 12.0),), episode=episode)


def judge(frames: list[Frame], *reqs: dict) -> list:
    acc = ConfusionAccumulator(CFG)
    for ep in dict.fromkeys(f.episode for f in frames):  # one accumulator per bag, merged (map/reduce)
        acc.merge(ConfusionAccumulator(CFG).add_frames(f for f in frames if f.episode == ep))
    results = {"confusion": to_json_dict(acc.result())}
    return check(TypeAdapter(list[Requirement]).validate_python(list(reqs)), results)


def test_grouped_misses_do_not_pass_recall() -> None:
    frames = [frame(t, f"ep{e}", e < 9) for e in range(10) for t in range(100)]
    (v,) = judge(frames, RECALL)
    assert v.point == pytest.approx(0.9) and v.n == 1000 and v.clusters == 10
    assert v.status == FAIL and v.lower < 0.8 and v.design_effect > 50
    assert "10 cluster(s)" in v.detail


def test_scattered_misses_still_pass_recall() -> None:
    rng = np.random.default_rng(24)
    miss = set(rng.choice(1000, 100, replace=False).tolist())
    frames = [frame(t, f"ep{e}", 100 * e + t not in miss) for e in range(10) for t in range(100)]
    (v,) = judge(frames, RECALL)
    assert v.status == PASS and v.point == pytest.approx(0.9) and v.design_effect < 1.5


def test_false_detections_fail_precision() -> None:
    rng = np.random.default_rng(5)
    frames = [frame(t, f"ep{e}", True, bool(rng.random() < 0.3)) for e in range(10) for t in range(100)]
    (v,) = judge(frames, PRECISION)
    ghosts = sum(len(f.detections) - 1 for f in frames)
    assert v.n == 1000 + ghosts and v.point == pytest.approx(1000 / (1000 + ghosts))
    assert v.status == FAIL


def test_too_few_episodes_are_inconclusive_never_pass_and_fail_the_gate() -> None:
    frames = [frame(t, f"ep{e}", t % 20 != 7) for e in range(5) for t in range(100)]  # 5 % misses, scattered
    (v,) = judge(frames, RECALL)
    assert v.status == INCONCLUSIVE and v.clusters == 5 and v.lower > 0.8  # the bound alone would have passed
    # Perfect episodes: no spread to estimate a correlation from, each episode may be one look (lower 0.46).
    (perfect,) = judge([frame(t, f"ep{e}", True) for e in range(5) for t in range(100)], RECALL)
    assert perfect.status == INCONCLUSIVE and perfect.lower < 0.5
    block = summary([v])
    assert block["overall"] == INCONCLUSIVE and block["inconclusive"] == 1
    # With the estimate itself below the threshold, the verdict is FAIL even on few episodes.
    bad = [frame(t, f"ep{e}", t % 2 == 0) for e in range(5) for t in range(100)]
    assert judge(bad, RECALL)[0].status == FAIL


def test_bbsl_pass_rate_uses_the_episodes_when_the_results_carry_them() -> None:
    req = TypeAdapter(list[Requirement]).validate_python(
        [{"metric": "bbsl", "spec": "s", "name": "pass_rate", "bound": "lower", "at_least": 0.8}]
    )
    t3 = {"table3": {"bbsl": {"T": 110, "F": 10}}}
    (plain,) = check(req, {"bbsl": {"s": t3}})
    assert plain.status == PASS and plain.clusters is None  # 110 of 120 as if independent: lower 0.85
    grouped = {"episodes": [f"e{i}" for i in range(12)], "T": [10] * 11 + [0], "n": [10] * 12}
    (v,) = check(req, {"bbsl": {"s": {**t3, "by_episode": grouped}}})
    assert v.clusters == 12 and v.design_effect > 5 and v.status == FAIL and v.lower < plain.lower
