"""`tune-monitor`: every frame judged at every contrast threshold by the node's own monitors; E1 SG/RH/AC equal
to the paper's classification form computed here from independently known labels and contrast statistics;
requirements by simultaneous bounds; the chosen point written for the node."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames
from perception_safety.io.config import load_model
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.tuning.grid import TuningError, operating_points, parse_values
from perception_safety.pipeline.tuning.select import choose, pareto_front, parse_requirement

CONFIG = """
bags:
  topics: {camera_info: '', ego: '', candidates: '', monitor_results: ''}
confusion:
  classes: {ped: [pedestrian], obs: [car]}
verification:
  max_speeds: [2]
  monitor_loop: {variants: [prop], mission_loss_envs: [obs]}
returns:
  e1: {iou_threshold: 0.5, score_threshold: 0.5, class_aware: true, classes: [pedestrian]}
monitors:
  contrast: {threshold: 1000}
  plausibility: {enabled: false}
  stop_region: {enabled: false}
"""


def row_variance(gray: np.ndarray) -> float:
    """The paper's contrast statistic on an 8-bit grey image: mean over rows of the variance along the row."""
    return float(np.mean(np.var(gray.astype(np.float64), axis=1)))


def recorded(root, n_bags: int = 10, n: int = 10, seed: int = 0):
    """Bags of small grey frames whose contrast varies, with a pedestrian or a car 3-9 m ahead or nothing; the
    pedestrian is missed in some frames (an E1 error). Returns (tau, contrast statistic) per frame in order.
    Ten episodes by default: E1's bounds have the episodes as the unit, and three or four episodes cannot bound RH
    away from 1 (docs/confusion-matrices.md, "Sampling unit")."""
    rng = np.random.default_rng(seed)
    taus, stats = [], []
    for b in range(n_bags):
        frames = []
        for i in range(n):
            spread = float(rng.choice([5.0, 20.0, 35.0, 60.0]))
            gray = np.clip(128 + rng.normal(0, spread, (36, 64)), 0, 255).astype(np.uint8)
            image = np.repeat(gray[:, :, None], 3, axis=2)
            kind = ("ped", "ped", "car", "empty")[i % 4]
            gts, dets, tau = [], [], False
            d = float(rng.uniform(3, 9))
            box = Box(20.0, 10.0, 30.0, 30.0)
            if kind in ("ped", "car"):
                cls = "pedestrian" if kind == "ped" else "car"
                gts.append(GroundTruthObject.at_position(box, cls, (d, 0.0, 0.0), f"{cls}{b}"))
                missed = kind == "ped" and rng.random() < 0.35
                tau = missed
                if not missed:
                    dets.append(Detection(box, cls, 0.9))
            frames.append(Frame(10**9 + i * 50_000_000, tuple(dets), tuple(gts), image=image))
            taus.append(tau)
            stats.append(row_variance(gray))
        write_frames(root / f"run{b}", frames)
    return np.array(taus), np.array(stats)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    root = tmp_path_factory.mktemp("tune")
    tau, stat = recorded(root / "bags")
    (root / "c.yaml").write_text(CONFIG)
    out = root / "out"
    code = main(["tune-monitor", str(root / "bags"), "--config", str(root / "c.yaml"), "--param",
                 "monitors.contrast.threshold", "--values", "10,600,1500,5000", "--require", "rh<=0.6",
                 "--out", str(out)])
    return code, json.loads((out / "tuning.json").read_text()), tau, stat, out


def test_e1_per_point_equals_the_classification_form(tuned):
    code, doc, tau, stat, _ = tuned
    assert code == 0 and doc["frames"] == tau.size and doc["episodes"] == 10
    for row, t in zip(doc["rows"], (10, 600, 1500, 5000), strict=True):
        alarm = stat < t  # the contrast monitor alarms below its threshold
        e1 = row["e1"]
        assert e1["alarm_rate"] == pytest.approx(alarm.mean())
        assert e1["SG"]["value"] == pytest.approx(np.mean(tau & alarm))     # error caught
        assert e1["RH"]["value"] == pytest.approx(np.mean(tau & ~alarm))    # error missed
        assert e1["AC"]["value"] == pytest.approx(np.mean(~tau & alarm))    # false alarm
        for k in ("SG", "RH", "AC"):
            assert e1[k]["lower"] <= e1[k]["value"] <= e1[k]["upper"]
    rates = [r["e1"]["alarm_rate"] for r in doc["rows"]]
    assert rates[0] < rates[-1] and rates == sorted(rates)


def test_system_figures_and_simultaneous_level(tuned):
    _, doc, _, _, _ = tuned
    assert doc["alpha_per_interval"] == pytest.approx(0.05 / (4 * 1))
    for row in doc["rows"]:
        sysf = row["system"]
        assert "error" not in sysf, sysf.get("error")
        for k in ("SG_sys", "RH_sys", "AC_sys"):
            assert sysf[k]["lower"] - 1e-12 <= sysf[k]["value"] <= sysf[k]["upper"] + 1e-12
    # a monitor that never alarms gains nothing; one that always alarms leaves no residual hazard in the chain
    none, always = doc["rows"][0]["system"], doc["rows"][-1]["system"]
    assert doc["rows"][0]["e1"]["alarm_rate"] == 0.0 and none["SG_sys"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert always["SG_sys"]["value"] > none["SG_sys"]["value"]


def test_the_choice_meets_the_requirement_by_its_bound_and_is_written_for_the_node(tuned):
    _, doc, _, _, out = tuned
    sel = doc["selection"]
    ok = [i for i, r in enumerate(doc["rows"]) if r["e1"]["RH"]["upper"] <= 0.6]
    assert ok and sel["chosen"] == min(ok, key=lambda i: doc["rows"][i]["e1"]["AC"]["value"])
    tuned_cfg = load_model(out / "monitors.tuned.yaml", MonitorsConfig, section="monitors")
    assert tuned_cfg.contrast.threshold == doc["rows"][sel["chosen"]]["params"]["monitors.contrast.threshold"]
    assert not tuned_cfg.plausibility.enabled  # the rest of the base config is kept
    assert (out / "tuning.html").read_text().count("<tr") == len(doc["rows"]) + 1
    assert set(doc["pareto_front"]) <= set(range(len(doc["rows"])))


def test_no_point_qualifies_exit_1_with_the_nearest_miss(tmp_path):
    recorded(tmp_path / "bags", n_bags=2, n=12, seed=3)
    (tmp_path / "c.yaml").write_text(CONFIG)
    code = main(["tune-monitor", str(tmp_path / "bags"), "--config", str(tmp_path / "c.yaml"), "--param",
                 "monitors.contrast.threshold", "--values", "100,200", "--require", "rh<=0.0001",
                 "--out", str(tmp_path / "o")])
    assert code == 1
    doc = json.loads((tmp_path / "o" / "tuning.json").read_text())
    assert doc["selection"]["chosen"] is None and doc["selection"]["nearest_miss"] > 0
    assert not (tmp_path / "o" / "monitors.tuned.yaml").exists()


def test_grid_and_requirement_parsing():
    assert parse_values("1:3:3", "p") == [1.0, 2.0, 3.0]
    assert parse_values("5, 1,5", "p") == [5.0, 1.0]
    with pytest.raises(TuningError, match="start:stop:n"):
        parse_values("a:b", "p")
    pts = operating_points(MonitorsConfig(), ["monitors.contrast.threshold", "monitors.plausibility.history_frames"],
                           ["1000,2000", "3,5"])
    assert [p.label for p in pts][:2] == ["contrast.threshold=1000, plausibility.history_frames=3",
                                         "contrast.threshold=1000, plausibility.history_frames=5"]
    assert pts[1].monitors.plausibility.history_frames == 5
    with pytest.raises(TuningError, match="no key 'treshold'"):
        operating_points(MonitorsConfig(), ["monitors.contrast.treshold"], ["1"])
    with pytest.raises(TuningError, match="not a numeric"):
        operating_points(MonitorsConfig(), ["monitors.contrast.statistic"], ["1"])
    with pytest.raises(TuningError, match="operating point"):
        operating_points(MonitorsConfig(), ["monitors.plausibility.history_frames"], ["-3"])
    r = parse_requirement("RH_SYS <= 0.05")
    assert (r.metric, r.op, r.bound) == ("RH_sys", "<=", 0.05)
    with pytest.raises(TuningError, match="METRIC"):
        parse_requirement("recall >= 0.9")


def test_choose_and_pareto_by_hand():
    def row(sg, ac, rh_hi):
        return {"e1": {"SG": {"value": sg, "lower": sg - 0.1, "upper": sg + 0.1},
                       "AC": {"value": ac, "lower": ac - 0.1, "upper": ac + 0.1},
                       "RH": {"value": 0.0, "lower": 0.0, "upper": rh_hi}}, "system": {}}
    rows = [row(0.1, 0.1, 0.5), row(0.3, 0.2, 0.2), row(0.3, 0.4, 0.1), row(0.2, 0.5, 0.05)]
    sel = choose(rows, [parse_requirement("rh<=0.2")], "availability")
    assert sel["chosen"] == 1  # 1, 2, 3 qualify; 1 has the smallest AC
    assert pareto_front(rows) == [0, 1]  # 2 and 3 are beaten by 1 (SG at least as high, AC lower)
    sel = choose(rows, [parse_requirement("rh<=0.01")], "availability")
    assert sel["chosen"] is None and sel["nearest"] == 3 and sel["nearest_miss"] == pytest.approx(0.04)


def test_evaluate_shows_tuning_and_the_model_check_when_configured(tmp_path):
    """`evaluate` with `tuning` and `model_check` sections: both in results.json and as report sections."""
    recorded(tmp_path / "bags", n=5, seed=7)
    base = CONFIG + "evaluate:\n  analyses: [confusion]\n"
    (tmp_path / "first.yaml").write_text(base)
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(tmp_path / "first.yaml"),
                 "--out", str(tmp_path / "model")]) == 0
    (tmp_path / "c.yaml").write_text(base + "tuning:\n  params: [monitors.contrast.threshold]\n"
                                     "  values: ['10,600,5000']\n  require: ['rh<=0.9']\n"
                                     "model_check:\n  model: model\n")
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(tmp_path / "c.yaml"),
                 "--out", str(tmp_path / "out")]) == 0
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["label"] for r in res["tuning"]["rows"]] == [f"contrast.threshold={v}" for v in (10, 600, 5000)]
    assert res["tuning"]["selection"]["chosen"] is not None
    assert res["model_check"]["holds"] is True  # the same recordings: nothing moved
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Monitor operating points (tuning)" in html and "model check" in html
    assert (tmp_path / "out" / "tuning" / "monitors.tuned.yaml").is_file()
