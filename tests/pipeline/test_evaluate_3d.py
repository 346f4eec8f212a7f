"""`evaluate` on a 3D object-list bag: distance-binned matrices by centre distance, Markov verification, and BBSL
(image regions) skipped with a warning."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main
from perception_safety.io.objects3d import AUTOWARE_OBJECTS_TYPE

from ..io.test_objects3d import det, obj, write_bag


def test_evaluate_on_an_autoware_object_bag(tmp_path):
    kinds = [("empty", "ped", "car", "both", "both")[i % 5] for i in range(60)]
    scenes, n_ped, n_found = [], 0, 0
    for i, kind in enumerate(kinds):
        gts, dets = [], []
        if kind in ("ped", "both"):
            n_ped += 1
            gts.append(obj(4.0 + (i % 3), 1.0, track="p"))
            if i % 4:
                n_found += 1
                dets.append(det(4.5 + (i % 3), 1.0))
        if kind in ("car", "both"):
            gts.append(obj(7.0, -3.0, "car", "c"))
            dets.append(det(7.3, -3.0, "car"))
        scenes.append((gts, dets))
    write_bag(tmp_path / "objects", AUTOWARE_OBJECTS_TYPE, scenes)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "confusion:\n  classes: {ped: [pedestrian], obs: [car]}\n  matching: centre_distance\n"
        "  centre_distance_m: 1.0\n  bin_edges: [0, 10, 20]\nverification:\n  max_speeds: [1]\n"
        "bags:\n  topics: {image: '', camera_info: '', ego: '', candidates: '', monitor_results: ''}\n",
        encoding="utf-8",
    )
    assert main(["evaluate", str(tmp_path / "objects"), "--config", str(cfg), "--out", str(tmp_path / "out")]) == 0
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "bbsl_not_for_3d" in {w["code"] for w in res["warnings"]}
    assert "centre_distance_on_image_boxes" not in {w["code"] for w in res["warnings"]}  # every object has a position
    ped_ap = res["detection_ap"]["ped"]["pooled"]  # nuScenes-style AP by centre distance
    assert 0 < ped_ap["ap"] <= 1 and ped_ap["ground_truth"] == n_ped
    assert set(ped_ap["ap_by_threshold"]) == {"0.5 m", "1 m", "2 m", "4 m"}
    rows = [r for r in res["verification"]["results"]
            if r["true_env"] == "ped" and r["spec"] == "stop_at_k" and r["variant"] == "class_by_distance"]
    assert rows and rows[0]["probability"] == pytest.approx(n_found / n_ped, abs=1e-9)
