"""`tune-monitor --episodes`: E2 per operating point by re-running the builtin simulator's sweep with the point's
monitors (cached per point); SG of E2 equal to the collisions counted here from the point's own logs."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main
from perception_safety.io.episode_log import read_episode_log
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import monitors_for, run_sweep

from ..sim.conftest import write_tiny_config


def test_e2_per_point_from_re_run_rollouts(tmp_path):
    cfg_path = write_tiny_config(tmp_path / "cfg", perturbations=[{"name": "smoke", "levels": [5]}],
                                 include_clean=True)
    cfg = load_episodes_config(cfg_path)
    run_sweep(cfg, tmp_path / "rec", monitors=monitors_for(cfg, cfg_path))
    out = tmp_path / "tune"
    args = ["tune-monitor", str(tmp_path / "rec" / "bags"), "--config", str(cfg_path), "--param",
            "monitors.contrast.threshold", "--values", "1,1e9", "--episodes", "--speed", "2", "--out", str(out)]
    assert main(args) == 0
    doc = json.loads((out / "tuning.json").read_text())
    for row in doc["rows"]:
        e2 = row["e2"]
        logs = sorted((out / "e2" / f"point-{row['index']:03d}" / "logs").glob("*.jsonl"))
        assert e2["episodes"] == len(logs) == 2
        collided = {"perception": 0, "monitored": 0}
        for log in logs:
            for ep in read_episode_log(log):
                if ep.rollout in collided:
                    collided[ep.rollout] += any(s.collision for s in ep.steps)
        # E2 per episode (eq. 16-17, returns from x_0, one counted collision): SG = (n_f - n_fm) / n
        assert e2["SG"]["value"] == pytest.approx((collided["perception"] - collided["monitored"]) / len(logs))
        assert e2["SG"]["lower"] <= e2["SG"]["value"] <= e2["SG"]["upper"]
    # a monitor that alarms on every frame brakes from the start: it costs availability
    assert doc["rows"][1]["e2"]["AC"]["value"] >= doc["rows"][0]["e2"]["AC"]["value"]
    # a second run reuses every point's finished episodes (nothing re-simulated)
    stamps = {p: p.stat().st_mtime_ns for p in (out / "e2").rglob("*.jsonl")}
    assert main(args) == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "e2").rglob("*.jsonl")} == stamps
