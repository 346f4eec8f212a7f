"""`evaluate` end to end on bags made here: same numbers as the analyses called directly, 1 vs N jobs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.evaluation.bbsl_testing import run_oracle
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.pcd.compute import compute_pcd
from perception_safety.evaluation.pcd.samples import samples_from_frames
from perception_safety.evaluation.returns import returns_report
from perception_safety.io.bag import write_frames
from perception_safety.io.episode_log import read_episode_log
from perception_safety.pipeline.evaluate import load_evaluate_spec
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.sweep import run_sweep


def evaluate(root, config, out, jobs=1) -> dict:
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(out), "--jobs", str(jobs)]) == 0
    return json.loads((out / "results.json").read_text())


def test_evaluate_equals_the_analyses_called_directly(recorded_bags, evaluated):
    _, frames, config = recorded_bags
    out, res, log = evaluated
    cfg, _ = load_evaluate_config(config)
    assert res["frames"] == len(frames) == 360

    direct = confusion_from_frames(frames, cfg.confusion)
    assert res["confusion"]["class_cm"] == direct.class_cm.tolist()
    assert res["confusion"]["prop_cm"] == direct.prop_cm.tolist()
    assert res["confusion"]["class_cm_pooled"] == direct.class_cm_pooled.tolist()
    # Intervals on every rate, thin columns flagged as warnings (bins beyond the objects' 95 m are empty).
    ped = next(m for m in res["confusion"]["metrics"] if (m["bin"], m["label"]) == ("pooled", "ped"))
    assert ped["recall_lower"] < ped["recall"] < ped["recall_upper"]
    assert res["confusion"]["alpha"] == 0.05 and len(res["confusion"]["class_p_lower"]) == len(direct.bin_edges)
    assert any(w["code"] == "thin_columns" for w in res["warnings"])

    s = samples_from_frames(frames, class_id="pedestrian")
    pcd = compute_pcd(s.x, s.y, cfg.pcd)
    got = res["pcd"]["pedestrian"]
    assert got["n"] == 360
    assert got["mpcd"] == pytest.approx(pcd.mpcd, abs=1e-9)
    np.testing.assert_allclose(got["change_points"], pcd.change_points.distances, atol=1e-9)
    # the score model and its choice are recorded; bootstrap over whole tracks (one pedestrian per bag)
    assert got["model"] == pcd.model and got["model_choice"] == pcd.model_choice
    assert got["sample_input"] == "thresholded"  # these bags carry no sub-threshold candidates
    assert got["bootstrap"]["unit"] == "track" and got["bootstrap"]["n_groups"] == 3
    assert got["pcd_ci"][0] <= got["pcd"]["value"] <= got["pcd_ci"][1]
    assert got["mpcd_ci"][0] <= got["mpcd"] <= got["mpcd_ci"][1]
    pcd_warnings = {w["code"] for w in res["warnings"] if w["analysis"] == "pcd"}
    assert {"pcd_bootstrap_groups", "pcd_thresholded_input"} <= pcd_warnings
    assert pcd_warnings >= {w.code for w in pcd.warnings}

    expected, skipped = {}, set()
    for name, env in cfg.verification.true_envs.items():
        for variant in cfg.verification.variants:
            one = cfg.verification.model_copy(update={"true_envs": {name: env}, "variants": [variant]})
            try:
                sweep = run_sweep(direct, one)
            except VerificationError:
                skipped.add(f"{name}/{variant}")
                continue
            expected.update(
                {
                    (r["variant"], r["true_env"], r["spec"], r["max_speed"], r["initial_speed"]): r["probability"]
                    for r in sweep.results
                }
            )
    assert skipped == set(res["verification"]["skipped"])
    assert not any(k.startswith("ped/") for k in skipped)
    got_v = {
        (r["variant"], r["true_env"], r["spec"], r["max_speed"], r["initial_speed"]): r["probability"]
        for r in res["verification"]["results"]
    }
    assert got_v.keys() == expected.keys() and len(got_v) > 0
    assert all(got_v[k] == pytest.approx(v, abs=1e-12) for k, v in expected.items())
    # every probability carries its interval-chain bounds (issue 13 item 2)
    for r in res["verification"]["results"]:
        assert r["lower"] - 1e-12 <= r["probability"] <= r["upper"] + 1e-12, r
    assert res["verification"]["bounds"]["alpha"] == cfg.verification.alpha
    spec = load_evaluate_spec("stop_region", cfg)
    oracle = run_oracle(spec, frames, cfg.bbsl).to_dict()
    assert res["bbsl"]["stop_region"]["table3"] == oracle["table3"]
    counts = {e: {c: v["count"] for c, v in row.items()} for e, row in oracle["table4"].items()}
    got4 = res["bbsl"]["stop_region"]["table4"]
    assert {e: {c: v["count"] for c, v in row.items()} for e, row in got4.items()} == counts
    assert oracle["table3"]["bbsl"]["T"] > 0 and oracle["table3"]["bbsl"]["F"] > 0

    direct_returns = returns_report(read_episode_log(log), cfg.returns)
    assert res["returns"]["E2"]["frames"] == direct_returns["E2"]["frames"]
    assert res["returns"]["E1"]["frames"] == direct_returns["E1"]["frames"]
    e2 = res["returns"]["E2"]["frames"]
    assert e2["SG"] + e2["RH"] == pytest.approx(e2["hazard_f"], abs=1e-12) and e2["SG"] > 0

    html = (out / "report.html").read_text()
    assert "Summary" in html and "data:image/png;base64," not in html  # figures are inline SVG, no PNG
    for name in ("confusion/rates_vs_distance.svg", "pcd/pcd_fit.svg", "verification/satisfaction.svg"):
        assert (out / name).read_text(encoding="utf-8").strip() in html  # the file on disk is what the page shows


def test_one_and_two_jobs_and_ray_give_identical_results(recorded_bags, ray_cluster, tmp_path, monkeypatch):
    """The map runs in worker processes with --jobs 2 and as Ray tasks with --executor ray (the session's local
    Ray instance); verification only sees the reduced matrices, so it is left out here to keep the test short
    (its equality with direct calls is the test above). These bags are too small to be worth a worker
    (`bag_pass.workers_for`), so a worker's start is made free here to run them in workers anyway."""
    from perception_safety.pipeline import bag_pass

    assert bag_pass.workers_for([bag_pass.MapInput("a", messages=600), bag_pass.MapInput("b", messages=600)], 2) == 1
    monkeypatch.setattr(bag_pass, "WORKER_START_S", 1e-9)
    assert bag_pass.workers_for([bag_pass.MapInput("a", messages=600), bag_pass.MapInput("b", messages=600)], 2) == 2
    root, _, full_config = recorded_bags
    config = tmp_path / "evaluate.yaml"
    config.write_text(full_config.read_text().replace("verification, bbsl, returns]", "bbsl]"))
    one, two, ray = tmp_path / "one", tmp_path / "two", tmp_path / "ray"
    evaluate(root, config, one, jobs=1)
    evaluate(root, config, two, jobs=2)
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(ray), "--executor", "ray"]) == 0
    partials = [sorted((d / "partials").iterdir()) for d in (one, ray)]
    assert [p.name for p in partials[0]] == [p.name for p in partials[1]] and len(partials[0]) == 3
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(*partials, strict=True))
    assert without_date(one / "results.json") == without_date(two / "results.json")
    assert without_date(one / "results.json") == without_date(ray / "results.json")


def without_date(path):
    """results.json minus the values that change from run to run: ``provenance.date_utc``, the wall-clock
    ``timings`` and the run id (all checked present)."""
    doc = json.loads(path.read_text())
    assert doc["provenance"].pop("date_utc").endswith("Z")
    assert doc.pop("timings")["total_s"] > 0
    assert doc.pop("run_id") and doc["complete"] is True
    return doc


def test_no_usable_topics_gives_error_and_exit_code(make_frames_like, tmp_path, capsys):
    from perception_safety.io.bag import BagTopics

    write_frames(tmp_path / "cam_only", make_frames_like, topics=BagTopics(detections="", ground_truth="", ego=""))
    code = main(["evaluate", str(tmp_path / "cam_only"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "anchor topic /detections" in err and "cam_only" in err


def test_jobs_must_be_positive(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path), "--out", str(tmp_path / "out"), "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_directory_without_bags_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["evaluate", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no rosbag2 bag or JSON Lines dataset found" in capsys.readouterr().err


@pytest.fixture
def make_frames_like():
    from perception_safety.core import Frame

    return [Frame(i, image=np.zeros((4, 4, 3), np.uint8)) for i in range(3)]


def test_malformed_messages_are_skipped_and_reported(tmp_path, capsys):
    import math

    from rosbags.rosbag2 import Writer

    from perception_safety.io import bag_messages as bm
    from perception_safety.io.typestore import ros2_typestore

    from .conftest import scene_frames

    store = ros2_typestore()
    frames = scene_frames(30, 5)
    with Writer(tmp_path / "bad", version=9) as w:
        det = w.add_connection("/detections", bm.DETECTIONS_TYPE, typestore=store)
        gt = w.add_connection("/ground_truth", bm.DETECTIONS_TYPE, typestore=store)
        for i, f in enumerate(frames):
            msg = bm.detections_to_msg(f.detections, f.stamp_ns)
            if i == 7 and msg.detections:
                msg.detections[0].bbox.size_x = math.nan
            w.write(det, f.stamp_ns, store.serialize_cdr(msg, bm.DETECTIONS_TYPE))
            w.write(
                gt,
                f.stamp_ns,
                store.serialize_cdr(bm.ground_truth_to_msg(f.ground_truth, f.stamp_ns), bm.DETECTIONS_TYPE),
            )
    out = tmp_path / "out"
    code = main(["evaluate", str(tmp_path / "bad"), "--out", str(out), "--config", str(_no_verification(tmp_path))])
    assert code == 0
    printed = capsys.readouterr().out
    assert "bad: 1 malformed message(s) skipped" in printed
    res = json.loads((out / "results.json").read_text())
    (quality,) = res["data_quality"].values()
    assert quality["frames"] == 29 and quality["skipped"][0][:2] == ["/detections", 7]
    assert "non-finite box" in quality["skipped"][0][2]
    assert "/detections message #7" in (out / "report.html").read_text()


def _no_verification(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("evaluate: {analyses: [confusion, pcd]}\nconfusion: {classes: {ped: [pedestrian], obs: [car]}}\n")
    return cfg
