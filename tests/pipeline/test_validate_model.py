"""`validate-model` end to end: a model from `evaluate`, new bags from the same detector accepted (exit 0), from a
degraded one rejected (exit 1) with the moved column named and P(phi) recomputed on the new counts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames

CONFIG = """
evaluate:
  analyses: [confusion, verification]
confusion:
  classes: {ped: [pedestrian], obs: [car]}
  bin_edges: [0, 10, 20, 30]
verification:
  max_speeds: [2]
  specs: [stop_at_k, phi]
  true_envs:
    ped: {class: [ped], prop: ped}
    obs: {class: [obs], prop: obs}
"""


def record(root, seed: int, p_ped: float, episodes: int = 12, frames: int = 30) -> None:
    """Episodes of a pedestrian or a car 2-28 m ahead; the pedestrian is found with probability ``p_ped``, with a
    per-episode wobble (frames of one episode are correlated)."""
    rng = np.random.default_rng(seed)
    for e in range(episodes):
        p_e = float(np.clip(p_ped + rng.normal(0, 0.05), 0, 1))
        out = []
        for i in range(frames):
            cls = "pedestrian" if i % 2 == 0 else "car"
            d = float(rng.uniform(2, 28))
            h = 7000.0 / d / 10
            box = Box(600.0, 400.0, 600.0 + h / 2, 400.0 + h)
            gt = GroundTruthObject.at_position(box, cls, (d, 0.0, 0.0), f"{cls}{e}")
            found = rng.random() < (p_e if cls == "pedestrian" else 0.9)
            dets = (Detection(box, cls, 0.9),) if found else ()
            out.append(Frame(10**9 + i * 50_000_000, dets, (gt,)))
        write_frames(root / f"ep{e:02d}", out)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("validity")
    (root / "c.yaml").write_text(CONFIG)
    record(root / "old", seed=1, p_ped=0.85)
    assert main(["evaluate", str(root / "old"), "--config", str(root / "c.yaml"), "--out", str(root / "run")]) == 0
    return root


def test_the_same_detector_still_fits(model, capsys):
    record(model / "same", seed=2, p_ped=0.85)
    code = main(["validate-model", str(model / "run"), str(model / "same"), "--config", str(model / "c.yaml"),
                 "--out", str(model / "v_same")])
    doc = json.loads((model / "v_same" / "validity.json").read_text())
    # the family: the columns the chain (V = 2: a 7 m road) reads, ped, obs and empty in [0, 10) m
    assert code == 0 and doc["holds"] and doc["columns_tested"] == 3
    assert {c["bin"] for c in doc["columns_outside_the_chain"]} == {"[10, 20) m", "[20, 30) m"}
    # a detectable shift wherever the rate varies; none where every look on both sides was a hit (no spread)
    for c in doc["columns"]:
        assert (c["min_detectable_shift"] is None) == (c["old_rate"] == c["new_rate"] == 1.0)
    assert "still fits" in capsys.readouterr().out


def test_a_degraded_detector_no_longer_fits(model, capsys):
    record(model / "worse", seed=3, p_ped=0.45)
    code = main(["validate-model", str(model / "run"), str(model / "worse"), "--config", str(model / "c.yaml"),
                 "--out", str(model / "v_worse")])
    doc = json.loads((model / "v_worse" / "validity.json").read_text())
    assert code == 1 and not doc["holds"]
    moved = {(c["bin"], c["true_label"]) for c in doc["columns_moved"]}
    assert moved and {label for _, label in moved} == {"ped"}
    for c in doc["columns_moved"]:
        assert c["new_rate"] < c["old_rate"] and c["old_clusters"] == c["new_clusters"] == 12
    # P(phi) recomputed on the new counts: finding the pedestrian less often can only lower P(phi | ped)
    key = next(k for k in doc["phi_model"] if k.endswith("/ped"))
    assert doc["phi_new"][key]["probability"] < doc["phi_model"][key]["probability"]
    assert "NO LONGER APPLIES" in capsys.readouterr().out


def test_a_folder_that_is_not_a_run_is_an_error(tmp_path, model):
    assert main(["validate-model", str(tmp_path), str(model / "old"), "--config", str(model / "c.yaml"),
                 "--out", str(tmp_path / "o")]) == 2
