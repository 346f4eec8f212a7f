"""`convert nuscenes`: tables built in code -> JSON Lines with ego-frame positions, benchmark classes, skips
counted, scenes as episodes; then nuScenes-style AP equal to the nuscenes-devkit's own `accumulate`/`calc_ap`."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.evaluation.detection_ap.centre_distance import (
    NUSCENES_THRESHOLDS_M,
    centre_ap,
    centre_ap_results,
    objects_from_frames,
)
from perception_safety.io.dataset import read_jsonl_frames

from .nuscenes_fixture import build


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("nusc")
    info = build(root / "v1.0-mini")
    out = root / "nusc.jsonl"
    assert main(["convert", "nuscenes", str(root / "v1.0-mini"), "--results", str(root / "v1.0-mini" / "results.json"),
                 "--out", str(out)]) == 0
    return info, list(read_jsonl_frames(out)), root


def test_ground_truth_in_the_ego_frame_with_benchmark_classes_and_skips(converted, capsys):
    info, frames, _ = converted
    assert len(frames) == info["expected"]["frames"]
    for f in frames:
        truth = sorted(info["truth"][f.frame_id])
        got = sorted((g.class_id, g.position[0], g.position[1]) for g in f.ground_truth)
        assert [t[0] for t in got] == [t[0] for t in truth]
        np.testing.assert_allclose([t[1:] for t in got], [t[1:] for t in truth], atol=1e-9)
        for g in f.ground_truth:
            assert g.distance == pytest.approx(math.hypot(*g.position[:2]))
            assert g.position[2] == pytest.approx(1.0)
            assert g.track_id.startswith("inst-")
        assert f.episode == "scene-" + f.frame_id.split("-")[1].zfill(4)
    n_pred = sum(len(v) for v in info["results"].values())
    assert sum(len(f.detections) for f in frames) == n_pred
    assert all(d.position is not None for f in frames for d in f.detections)


def test_the_report_counts_what_was_skipped(tmp_path, capsys):
    info = build(tmp_path / "t", n_scenes=2, samples_per_scene=3, seed=5)
    assert main(["convert", "nuscenes", str(tmp_path / "t"), "--out", str(tmp_path / "o.jsonl")]) == 0
    out = capsys.readouterr().out
    assert f"skipped {info['expected']['skipped_animal']} annotations of categories the benchmark does not " \
           "evaluate (animal)" in out
    assert f"skipped {info['expected']['skipped_empty']} annotations with no lidar or radar point" in out


def test_a_missing_table_names_the_file(tmp_path):
    build(tmp_path / "t", n_scenes=1, samples_per_scene=1)
    (tmp_path / "t" / "ego_pose.json").unlink()
    assert main(["convert", "nuscenes", str(tmp_path / "t"), "--out", str(tmp_path / "o.jsonl")]) == 2


def devkit():
    """The nuscenes-devkit's detection algorithm modules, imported without the package's __init__ (which loads
    the whole NuScenes database class and its map/plot dependencies we do not need)."""
    spec = importlib.util.find_spec("nuscenes")
    if spec is None:
        pytest.fail("nuscenes-devkit is a test dependency (requirements-nodeps.txt); run make env")
    if "nuscenes" not in sys.modules:
        pkg = types.ModuleType("nuscenes")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["nuscenes"] = pkg
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.common.utils import center_distance
    from nuscenes.eval.detection.algo import accumulate, calc_ap
    from nuscenes.eval.detection.data_classes import DetectionBox

    return EvalBoxes, DetectionBox, accumulate, calc_ap, center_distance


def devkit_boxes(info, DetectionBox, EvalBoxes):
    """Ground truth and predictions in the global frame, straight from the fixture's tables (not our converter)."""
    t = info["tables"]
    cat = {c["token"]: c["name"] for c in t["category"]}
    inst = {i["token"]: cat[i["category_token"]] for i in t["instance"]}
    names = {"human.pedestrian.adult": "pedestrian", "human.pedestrian.child": "pedestrian", "vehicle.car": "car"}
    gt, pred = EvalBoxes(), EvalBoxes()
    by_sample: dict[str, list] = {s["token"]: [] for s in t["sample"]}
    for a in t["sample_annotation"]:
        name = names.get(inst[a["instance_token"]])
        if name is None or a["num_lidar_pts"] + a["num_radar_pts"] == 0:
            continue
        by_sample[a["sample_token"]].append(DetectionBox(
            sample_token=a["sample_token"], translation=tuple(a["translation"]), size=tuple(a["size"]),
            rotation=tuple(a["rotation"]), detection_name=name, attribute_name="", num_pts=5))
    for tok, boxes in by_sample.items():
        gt.add_boxes(tok, boxes)
        pred.add_boxes(tok, [DetectionBox(
            sample_token=tok, translation=tuple(r["translation"]), size=tuple(r["size"]),
            rotation=tuple(r["rotation"]), velocity=tuple(r["velocity"]), detection_name=r["detection_name"],
            detection_score=r["detection_score"], attribute_name="") for r in info["results"][tok]])
    return gt, pred


def test_centre_distance_ap_equals_the_nuscenes_devkit(converted):
    info, frames, _ = converted
    EvalBoxes, DetectionBox, accumulate, calc_ap, center_distance = devkit()
    gt_boxes, pred_boxes = devkit_boxes(info, DetectionBox, EvalBoxes)
    gt, pred = objects_from_frames(frames)
    compared = 0
    for cls in ("pedestrian", "car"):
        for th in NUSCENES_THRESHOLDS_M:
            md = accumulate(gt_boxes, pred_boxes, cls, center_distance, th)
            expected = calc_ap(md, 0.1, 0.1)
            ours, npos, _ = centre_ap(gt, pred, cls, th)
            assert npos > 0
            assert ours == pytest.approx(expected, abs=1e-12), (cls, th)
            compared += 1
    assert compared == 8
    # the data are not trivial: AP differs between the tightest and the loosest threshold
    assert centre_ap(gt, pred, "pedestrian", 0.5)[0] < centre_ap(gt, pred, "pedestrian", 4.0)[0]


def test_ap_per_distance_bin_and_episode_interval(converted):
    _, frames, _ = converted
    gt, pred = objects_from_frames(frames, [f.episode for f in frames])
    res = centre_ap_results(gt, pred, [0.0, 20.0, 50.0], n_boot=50)
    ped = res["pedestrian"]
    assert ped["pooled"]["episodes"] == 3
    assert 0.0 <= ped["pooled"]["ap_lower"] <= ped["pooled"]["ap"] <= ped["pooled"]["ap_upper"] <= 1.0
    near, far = ped["bins"]["[0, 20)"], ped["bins"]["[20, 50)"]
    assert near["ground_truth"] + far["ground_truth"] == ped["pooled"]["ground_truth"]
    # a bin's AP is the AP of the objects in it (independent recomputation on the filtered sets)
    keep_g, keep_p = gt.distance < 20.0, pred.distance < 20.0
    mean_ap = np.mean([centre_ap(gt.select(keep_g), pred.select(keep_p), "pedestrian", t)[0]
                       for t in NUSCENES_THRESHOLDS_M])
    assert near["ap"] == pytest.approx(mean_ap)


def test_evaluate_on_the_converted_set_reports_ap_by_distance_and_recall(converted, tmp_path):
    _, frames, root = converted
    cfg = tmp_path / "c.yaml"
    cfg.write_text("evaluate:\n  analyses: [confusion, detection_ap]\nconfusion:\n  classes: {ped: [pedestrian],"
                   " obs: [car]}\n  matching: centre_distance\n  centre_distance_m: 2.0\n  bin_edges: [0, 20, 50]\n",
                   encoding="utf-8")
    assert main(["evaluate", str(root / "nusc.jsonl"), "--config", str(cfg), "--out", str(tmp_path / "o")]) == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    gt, pred = objects_from_frames(frames, [f.episode for f in frames])
    ap = res["detection_ap"]["ped"]
    expected = np.mean([centre_ap(gt, pred, "pedestrian", t)[0] for t in NUSCENES_THRESHOLDS_M])
    assert ap["pooled"]["ap"] == pytest.approx(expected)
    assert set(ap["bins"]) == {"[0, 20)", "[20, 50)"} and ap["pooled"]["episodes"] == 3
    recall = {(m["bin"], m["label"]): m for m in res["confusion"]["metrics"]}
    assert 0 < recall[("pooled", "ped")]["recall"] < 1


def test_round_trip_keeps_detection_positions(converted):
    _, _frames, root = converted
    doc = [json.loads(line) for line in (root / "nusc.jsonl").read_text().splitlines()]
    assert all("position" in d for rec in doc for d in rec["detections"])
    assert {rec["episode"] for rec in doc} == {"scene-0000", "scene-0001", "scene-0002"}
