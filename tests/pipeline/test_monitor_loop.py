"""`evaluate` on bags that carry the monitor's per-frame status: model-checked SG/RH/AC beside E1/E2."""

from __future__ import annotations

import json

from perception_safety.cli import main
from perception_safety.evaluation.confusion.by_verdict import split_by_verdict
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.io.bag import write_frames
from perception_safety.monitors.base import MonitorResult

from .conftest import scene_frames, write_episode_log

CONFIG = """
evaluate:
  analyses: [verification, returns]
confusion:
  classes: {ped: [pedestrian], obs: [car]}
verification:
  max_speeds: [1, 2]
  specs: [stop_at_k]
  variants: [prop_by_distance]
"""


def _alarm(frame) -> bool:
    return len(frame.detections) < len(frame.ground_truth)  # a toy monitor: alarm when something is missed


def test_evaluate_reports_system_metrics_from_bag_verdicts(tmp_path):
    parts = [scene_frames(150, s) for s in (11, 12)]
    root = tmp_path / "bags"
    for k, frames in enumerate(parts):
        results = [(MonitorResult("contrast", False), MonitorResult("monitor", _alarm(f))) for f in frames]
        write_frames(root / f"run{k}", frames, monitor_results=results)
    write_frames(root / "plain", scene_frames(20, 13))  # no monitor status: left out of the joint counts
    cfg = tmp_path / "e.yaml"
    cfg.write_text(CONFIG)
    log = tmp_path / "episodes.jsonl"
    write_episode_log(log)
    out = tmp_path / "out"
    assert main(["evaluate", str(root), "--config", str(cfg), "--out", str(out), "--episodes", str(log)]) == 0
    res = json.loads((out / "results.json").read_text())
    ml = res["monitor_loop"]
    frames = [f for p in parts for f in p]
    split = split_by_verdict(frames, [_alarm(f) for f in frames],
                             ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}))
    assert ml["frames_with_verdict"] == 300
    (near,) = [c for c in ml["verdict_counts"] if c["true_env"] == "ped" and c["bin"][0] == 0.0]
    assert near["n_alarm"] == int(split.alarm.prop_cm[0, :, 0].sum())
    assert near["n_no_alarm"] == int(split.no_alarm.prop_cm[0, :, 0].sum())
    haz = [r for r in ml["results"] if r["measure"] == "hazard"]
    assert {(r["max_speed"], r["initial_speed"]) for r in haz} == {(1, 1), (2, 1), (2, 2)}
    for r in haz:
        assert abs(r["SG_sys"] + r["RH_sys"] - (r["P_f"] - r["P_fstar"])) < 1e-12  # eq. 6 of the SG/RH/AC paper
        assert r["SG_sys"] >= -1e-12  # braking on an alarm never adds a hazard with the braking rule
    codes = {w["code"] for w in res["warnings"] if w["analysis"] == "monitor_loop"}
    assert "no_verdicts" in codes
    assert any("plain" in w["message"] for w in res["warnings"] if w["code"] == "no_verdicts")
    html = (out / "report.html").read_text()
    assert "Monitor in the loop" in html and "E2 (frames)" in html and "model-checked prop_by_distance" in html
    # issue 24 item 8: the assumptions beside the numbers; E1 in its own table, never beside SG_sys
    assert any("present at the crosswalk at every step" in a for a in ml["assumptions"])
    assert "Assumptions of the model-checked values" in html and "hazard proxy" in html
    beside = html[html.index("Closed-loop outcomes (E2"):]
    beside = beside[:beside.index("</table>")] if "</table>" in beside else beside
    assert "E1 (" not in beside
    assert (out / "verification" / "monitor_loop.csv").read_text().startswith("variant,measure,true_env")


def test_episode_logs_give_the_verdicts_when_the_bags_have_none(tmp_path):
    """Bags without monitor status + an episode log whose perception rollout carries frames and alarms: the joint
    counts come from the log's perception frames (and only from them)."""
    from perception_safety.io.episode_log import EpisodeLogWriter, EpisodeStep

    frames = scene_frames(200, 21)
    write_frames(tmp_path / "bags" / "plain", frames)
    log = tmp_path / "ep.jsonl"
    with EpisodeLogWriter(log) as w:
        for r in ("perception", "monitored", "ground_truth"):
            steps = [EpisodeStep(t, True, alarm=_alarm(f), frame=f) for t, f in enumerate(frames)]
            w.write_episode("s", r, steps if r == "perception" else steps[:5], {"horizon": 200})
    cfg = tmp_path / "e.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(cfg), "--out", str(out), "--episodes",
                 str(log)]) == 0
    ml = json.loads((out / "results.json").read_text())["monitor_loop"]
    assert ml["frames_with_verdict"] == 200 and ml["verdict_source"].startswith("episode logs")
    split = split_by_verdict(frames, [_alarm(f) for f in frames],
                             ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}))
    (near,) = [c for c in ml["verdict_counts"] if c["true_env"] == "ped" and c["bin"][0] == 0.0]
    assert (near["n_no_alarm"], near["n_alarm"]) == (int(split.no_alarm.prop_cm[0, :, 0].sum()),
                                                    int(split.alarm.prop_cm[0, :, 0].sum()))
    assert ml["results"]
