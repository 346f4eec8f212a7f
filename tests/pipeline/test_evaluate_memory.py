"""`evaluate` on bags whose pedestrian misses come in runs (issue 24 item 9): the independence test, the chain
with one step of observation memory beside the memoryless one, warnings, and requirements on P(phi).

Truth: P(the car passes k) under the braking rule with Markov misses, by a recursion over (cell, speed, last
observation) written here from DESIGN.md's rule (no chain code), at the generator's own rates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames
from perception_safety.verification.coverage import markov_miss_sequences
from tests.markov_truth import true_hazard

R, Q = 0.8, 0.1  # P(miss | miss before), P(miss | hit before)
EPISODES, FRAMES_PER_BIN = 30, 25
DISTANCE = {0: 2.0, 1: 10.0}  # metres, in bins [0, 3) and [3, 100)
CONFIG = """
evaluate: {analyses: [verification]}
confusion: {classes: {ped: [pedestrian]}, bin_edges: [0, 3, 100]}
verification:
  variants: [class_by_distance]
  true_envs: {ped: {class: [ped], prop: ped}}
  max_speeds: [3]
  specs: [hazard]
  custom_specs: {hazard: 'P=? [F "past_k"]'}
  posterior: {enabled: false}
"""


def episode_frames(bins: np.ndarray, labels: np.ndarray) -> list[Frame]:
    """One pedestrian approaching through the bins; detected where the label is 0 (``ped``), missed at 2."""
    frames = []
    for i, (b, y) in enumerate(zip(bins.tolist(), labels.tolist(), strict=True)):
        d = DISTANCE[b]
        h = 700.0 / d
        box = Box(640 - h / 3, 400 - h / 2, 640 + h / 3, 400 + h / 2)
        gt = GroundTruthObject.at_position(box, "pedestrian", (d, 0.0, 0.0), "p")
        dets = (Detection(box, "pedestrian", 0.9),) if y == 0 else ()
        frames.append(Frame(10**9 + i * 50_000_000, dets, (gt,), EgoState(speed=5.0)))
    return frames


@pytest.fixture(scope="module")
def runs_bags(tmp_path_factory):
    """``EPISODES`` bags of run-length-correlated misses, and the config."""
    tmp = tmp_path_factory.mktemp("memory")
    rng = np.random.default_rng(11)
    for e, (bins, labels) in enumerate(markov_miss_sequences(rng, EPISODES, FRAMES_PER_BIN, 2, R, Q)):
        write_frames(tmp / "bags" / f"ep{e:02d}", episode_frames(bins, labels))
    (tmp / "evaluate.yaml").write_text(CONFIG)
    return tmp


def evaluate(tmp, bags, requirements: str, name: str, check: bool = True) -> tuple[int, dict]:
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(CONFIG + "requirements:\n" + requirements)
    out = tmp / name
    args = ["evaluate", *map(str, bags), "--config", str(cfg), "--out", str(out)] + (["--check"] if check else [])
    code = main(args)
    return code, json.loads((out / "results.json").read_text())


def test_runs_of_misses_give_the_memory_chain_beside_the_memoryless_one(runs_bags, capsys):
    bags = sorted((runs_bags / "bags").iterdir())
    req = "  - {id: hazard, metric: verification, spec: hazard, initial_speed: 3, bound: upper, at_most: 0.99}\n"
    code, res = evaluate(runs_bags, bags, req, "all")
    printed = capsys.readouterr().out
    rows = {r["initial_speed"]: r for r in res["verification"]["results"]}
    truth = true_hazard(3, 3, Q / (1 - R + Q), R, Q)
    row = rows[3]
    assert row["independence"] == "memory" and row["clusters"] == EPISODES and row["memory_clusters"] >= 10
    # The memoryless chain is wrong by far more than the sampling noise; the memory chain estimates the truth.
    assert abs(row["probability"] - truth) > 0.05
    assert abs(row["memory_probability"] - truth) < 0.03
    assert row["memory_lower"] <= truth <= row["memory_upper"]
    chain = res["verification"]["chains"][0]
    assert chain["independence"] == "memory"
    tests = chain["independence_tests"]
    assert {t["verdict"] for t in tests} == {"dependent"} and all(t["episodes"] == EPISODES for t in tests)
    assert all(t["p_miss_after_miss"] > 0.6 > 0.2 > t["p_miss_after_hit"] for t in tests)
    warned = [w for w in res["warnings"] if w["code"] == "verification_independence"]
    assert any("misses come in runs" in w["message"] for w in warned)
    assert "misses come in runs" in printed
    html = (runs_bags / "all" / "report.html").read_text()
    assert "Independence of consecutive observations" in html and "with memory" in html
    # The requirement reads the memory chain's upper bound (the memoryless one would be another number).
    item = res["requirements"]["items"][0]
    assert item["upper"] == pytest.approx(row["memory_upper"]) and "observation memory" in item["detail"]
    assert item["status"] == "PASS" and code == 0
    # Issue 24 item 8: every episode's own chain, averaged, beside the pooled chain (results, screen, report).
    assert row["episode_chains"] == EPISODES
    assert 0 <= row["episode_lower"] <= row["episode_mean"] <= row["episode_upper"] <= 1
    assert "per-episode chains: mean" in printed and "mean over episodes" in html


def test_p_phi_on_fewer_than_ten_episodes_is_inconclusive_and_check_exits_3(runs_bags, capsys):
    bags = sorted((runs_bags / "bags").iterdir())[:6]
    req = "  - {id: hazard, metric: verification, spec: hazard, initial_speed: 3, bound: upper, at_most: 0.99}\n"
    code, res = evaluate(runs_bags, bags, req, "few")
    item = res["requirements"]["items"][0]
    assert item["status"] == "INCONCLUSIVE" and res["requirements"]["overall"] == "INCONCLUSIVE"
    assert item["clusters"] is not None and item["clusters"] < 10
    assert code == 3
    assert "INCONCLUSIVE" in capsys.readouterr().out
