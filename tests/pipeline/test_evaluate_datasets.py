"""`evaluate` on JSON Lines datasets (alone, mixed with bags, found in folders), with AP by distance.

The AP numbers are checked against the COCO reference evaluator (pycocotools) run on the *original* COCO and
KITTI-style data built here, with each object's distance in the ``area`` slot so that pycocotools' area ranges
are the distance bins (an unmatched detection has no distance here: area -1, outside every bin but inside the
pooled range, which is the documented rule).
"""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import yaml
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from perception_safety.cli import main
from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames
from perception_safety.io.dataset import read_jsonl_frames, write_jsonl_frames
from tests.pipeline.conftest import scene_frames

EDGES = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
CONFIG = """
evaluate:
  analyses: {analyses}
confusion:
  classes: {{person: [person, pedestrian], car: [car]}}
  bin_edges: {edges}
detection_ap:
  n_boot: 100
"""


def _coco_scene(seed: int, n_images: int = 30) -> tuple[dict, list[dict]]:
    rng = np.random.default_rng(seed)
    images, anns, results = [], [], []
    for img in range(1, n_images + 1):
        images.append({"id": img, "file_name": f"{img:04d}.png", "width": 1280, "height": 720})
        boxes = []
        for _ in range(rng.integers(0, 7)):
            x, y, w, h = rng.uniform(0, 1100), rng.uniform(0, 560), rng.uniform(10, 150), rng.uniform(10, 150)
            cat = int(rng.integers(1, 3))
            anns.append({"id": len(anns) + 1, "image_id": img, "category_id": cat, "bbox": [x, y, w, h],
                         "iscrowd": 0, "distance": float(rng.uniform(1, 59))})  # fmt: skip
            boxes.append((cat, x, y, w, h))
        for _ in range(rng.integers(0, 9)):
            if boxes and rng.random() < 0.75:
                cat, x, y, w, h = boxes[rng.integers(len(boxes))]
                j = rng.normal(0, 0.1, 4) * [w, h, w, h]
                x, y, w, h = x + j[0], y + j[1], max(2.0, w + j[2]), max(2.0, h + j[3])
            else:
                cat = int(rng.integers(1, 3))
                x, y, w, h = rng.uniform(0, 1100), rng.uniform(0, 560), rng.uniform(10, 150), rng.uniform(10, 150)
            results.append({"image_id": img, "category_id": cat, "bbox": [x, y, w, h], "score": float(rng.random())})
    cats = [{"id": 1, "name": "person"}, {"id": 2, "name": "car"}]
    return {"images": images, "annotations": anns, "categories": cats}, results


def _pycocotools(gt_doc: dict, results: list[dict], names: list[str]) -> dict[str, list[tuple | None]]:
    """Per class name: (AP, AP50, AP75) for pooled and each bin (None where COCO has no ground truth)."""
    gt = COCO()
    gt.dataset = {**gt_doc, "annotations": [{**a, "area": a["distance"]} for a in gt_doc["annotations"]]}
    gt.createIndex()
    dt = gt.loadRes([dict(r) for r in results])
    for ann in dt.dataset["annotations"]:
        ann["area"] = -1.0  # no distance estimate: outside every bin, inside the pooled range below
    ev = COCOeval(gt, dt, "bbox")
    ev.params.areaRng = [[-1e9, 1e9]] + [[lo, hi] for lo, hi in pairwise(EDGES)]
    ev.params.areaRngLbl = [str(i) for i in range(len(ev.params.areaRng))]
    ev.evaluate()
    ev.accumulate()
    out = {}
    for k, cat_id in enumerate(ev.params.catIds):
        cells = []
        for a in range(len(ev.params.areaRng)):
            p = ev.eval["precision"][:, :, k, a, 2]
            cells.append(None if (p <= -1).all() else (float(p.mean()), float(p[0].mean()), float(p[5].mean())))
        out[names[cat_id - 1]] = cells
    return out


def _ours(results_json: dict, name: str) -> list[tuple | None]:
    entry = results_json["detection_ap"][name]
    cells = [entry["pooled"], *entry["bins"].values()]
    return [None if c["ap"] is None else (c["ap"], c["ap50"], c["ap75"]) for c in cells]


def _assert_same(ours: list, ref: list, what: str) -> int:
    assert len(ours) == len(ref)
    n = 0
    for i, (a, b) in enumerate(zip(ours, ref, strict=True)):
        if b is None:
            assert a is None, (what, i)
        else:
            assert a == pytest.approx(b, abs=1e-12), (what, i)
            n += 1
    return n


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    """AP alone (the confusion analysis' report pages are the slow part and have their own tests)."""
    path = tmp_path_factory.mktemp("cfg") / "evaluate.yaml"
    path.write_text(CONFIG.format(edges=EDGES, analyses="[detection_ap]"))
    return path


@pytest.fixture(scope="module")
def config_with_recall(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "evaluate.yaml"
    path.write_text(CONFIG.format(edges=EDGES, analyses="[confusion, detection_ap]"))
    return path


def test_coco_set_converted_then_evaluated_gives_pycocotools_ap(tmp_path: Path, config: Path) -> None:
    gt_doc, results = _coco_scene(5)
    (tmp_path / "gt.json").write_text(json.dumps(gt_doc))
    (tmp_path / "res.json").write_text(json.dumps(results))
    data = tmp_path / "coco.jsonl"
    assert main(["convert", "coco", str(tmp_path / "gt.json"), "--results", str(tmp_path / "res.json"),
                 "--distance-key", "distance", "--out", str(data)]) == 0  # fmt: skip
    out = tmp_path / "out"
    assert main(["evaluate", str(data), "--config", str(config), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    ref = _pycocotools(gt_doc, results, ["person", "car"])
    checked = sum(_assert_same(_ours(res, name), ref[name], name) for name in ("person", "car"))
    assert checked >= 10
    assert res["inputs"] == [str(data)] and res["input_roles"][0]["role"] == "dataset"
    codes = {w["code"] for w in res["warnings"]}
    assert {"dataset_without_episodes", "detections_without_distance"} <= codes
    pooled = res["detection_ap"]["person"]["pooled"]
    with_person = {a["image_id"] for a in gt_doc["annotations"] + results if a["category_id"] == 1}
    assert pooled["episodes"] == len(with_person)  # each image its own unit (no episode key)
    assert pooled["ap_lower"] <= pooled["ap"] <= pooled["ap_upper"]
    html = (out / "report.html").read_text()
    assert "Detection AP by distance" in html and f"{pooled['ap']:.3f}" in html


def _kitti_line(kind: str, box: tuple, xyz: tuple, score: float | None = None) -> str:
    x1, y1, x2, y2 = box
    tail = f" {score:.6f}" if score is not None else ""
    return f"{kind} 0.00 0 0.00 {x1:.2f} {y1:.2f} {x2:.2f} {y2:.2f} 1.70 0.60 0.80 {xyz[0]:.2f} {xyz[1]:.2f} " \
           f"{xyz[2]:.2f} 0.00{tail}"  # fmt: skip


def test_kitti_set_built_in_code_gives_per_distance_ap_and_recall(tmp_path: Path, config_with_recall: Path) -> None:
    rng = np.random.default_rng(3)
    labels, dets = tmp_path / "label_2", tmp_path / "det_2"
    labels.mkdir(), dets.mkdir()
    gt_doc = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "car"}]}
    distances = []
    for img in range(1, 41):
        gt_lines, det_lines = [], []
        gt_doc["images"].append({"id": img})
        for _ in range(rng.integers(1, 5)):
            kind = "Pedestrian" if rng.random() < 0.5 else "Car"
            z, x = rng.uniform(3, 55), rng.uniform(-8, 8)
            h = 720 * 1.6 / z
            u = 620 + 720 * x / z
            box = (u - h / 4, 190 - h / 2, u + h / 4, 190 + h / 2)
            gt_lines.append(_kitti_line(kind, box, (x, 1.65, z)))
            distances.append(float(np.linalg.norm([z, -x, -1.65])))  # ego frame (Z, -X, -Y) of the camera's X Y Z
            if rng.random() < 1.1 - z / 60:  # detected less often far away
                j = rng.normal(0, 0.06 * h, 4)
                dbox = (box[0] + j[0], box[1] + j[1], box[2] + abs(j[2]), box[3] + abs(j[3]))
                det_lines.append(_kitti_line(kind, dbox, (x, 1.65, z), float(rng.random())))
        (labels / f"{img:06d}.txt").write_text("\n".join(gt_lines) + "\n")
        (dets / f"{img:06d}.txt").write_text("\n".join(det_lines) + "\n")
    data = tmp_path / "kitti.jsonl"
    assert main(["convert", "kitti", str(labels), "--detections", str(dets), "--out", str(data),
                 "--class-map", "Pedestrian=person", "--class-map", "Car=car"]) == 0  # fmt: skip
    out = tmp_path / "out"
    assert main(["evaluate", str(data), "--config", str(config_with_recall), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    # KITTI text rounds to 2 decimals; the reference reads the converted boxes back so both see the same pixels
    frames = list(read_jsonl_frames(data))
    assert [g.distance for f in frames for g in f.ground_truth] == pytest.approx(distances, abs=0.01)
    results = []
    for img, f in enumerate(frames, start=1):
        for g in f.ground_truth:
            b = g.box
            cat = 1 if g.class_id == "person" else 2
            bbox = [b.x_min, b.y_min, b.x_max - b.x_min, b.y_max - b.y_min]
            gt_doc["annotations"].append({"id": len(gt_doc["annotations"]) + 1, "image_id": img, "iscrowd": 0,
                                          "category_id": cat, "distance": g.distance, "bbox": bbox})  # fmt: skip
        for d in f.detections:
            b = d.box
            results.append({"image_id": img, "category_id": 1 if d.class_id == "person" else 2, "score": d.score,
                            "bbox": [b.x_min, b.y_min, b.x_max - b.x_min, b.y_max - b.y_min]})  # fmt: skip
    ref = _pycocotools(gt_doc, results, ["person", "car"])
    checked = sum(_assert_same(_ours(res, name), ref[name], name) for name in ("person", "car"))
    assert checked >= 10
    recall = {(m["label"], m["bin"]): m for m in res["confusion"]["metrics"]}
    assert any(m["recall"] is not None for (label, b), m in recall.items() if label == "person" and b != "pooled")
    ap = res["detection_ap"]["person"]["bins"]
    assert ap["[0, 10)"]["ap50"] > ap["[40, 50)"]["ap50"]  # worse far away, as the data were built


def test_bags_and_datasets_mixed_and_found_in_a_folder(tmp_path: Path, config: Path) -> None:
    root = tmp_path / "inputs"
    write_frames(root / "bag0", scene_frames(40, 1), storage="mcap")
    frames = [replace(f, episode=f"seq{i // 10}") for i, f in enumerate(scene_frames(40, 2))]
    write_jsonl_frames(root / "data" / "seq.jsonl", frames)
    (root / "logs").mkdir()
    (root / "logs" / "episode.jsonl").write_text('{"type": "begin", "episode": "e", "rollout": "perception"}\n')
    out = tmp_path / "out"
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["inputs"] == [str(root / "bag0"), str(root / "data" / "seq.jsonl")]  # the episode log is not data
    assert res["frames"] == 80
    assert res["data_quality"][str(root / "data" / "seq.jsonl")]["episodes"] == 4
    assert len(list((out / "partials").glob("*.json"))) == 2
    partial = json.loads(next((out / "partials").glob("00001_*.json")).read_text())
    assert partial["kind"] == "dataset"
    assert [ep["episode"] for ep in partial["episodes"]] == ["seq0", "seq1", "seq2", "seq3"]  # parts per episode
    assert res["detection_ap"]["person"]["pooled"]["episodes"] == 5  # the bag + four dataset episodes
    assert "dataset_without_episodes" not in {w["code"] for w in res["warnings"]}
    # the same numbers as the frames evaluated from one dataset file holding both
    both = tmp_path / "both.jsonl"
    write_jsonl_frames(both, [replace(f, episode=str(root / "bag0")) for f in scene_frames(40, 1)] + frames)
    out2 = tmp_path / "out2"
    assert main(["evaluate", str(both), "--config", str(config), "--out", str(out2)]) == 0
    res2 = json.loads((out2 / "results.json").read_text())
    assert res2["detection_ap"] == res["detection_ap"] and res2["frames"] == res["frames"]


def test_malformed_dataset_lines_are_listed_not_fatal(tmp_path: Path, config: Path) -> None:
    data = tmp_path / "d.jsonl"
    write_jsonl_frames(data, scene_frames(10, 4))
    with data.open("a") as fh:
        fh.write('{"ground_truth": [{"box": [1, 2, 3], "class": "car", "distance": 3}]}\n')
    out = tmp_path / "out"
    assert main(["evaluate", str(data), "--config", str(config), "--out", str(out)]) == 0
    skipped = json.loads((out / "results.json").read_text())["data_quality"][str(data)]["skipped"]
    assert skipped == [["line", 11, "ground_truth[0]: box: expected [x_min, y_min, x_max, y_max], got [1, 2, 3]"]]


def test_false_detection_lands_in_the_same_bin_for_ap_and_precision(tmp_path: Path) -> None:
    """With confusion.ground_camera, a ghost's box bottom gives its bin; AP and precision per bin agree on it."""
    # camera 1.5 m up, fy = 700, cy = 360: a box bottom at row 360 + 700 * 1.5 / 15 = 430 is 15 m ahead
    frames = []
    for i in range(6):
        ped = Box(600, 300, 640, 400)  # bottom 400 -> 700 * 1.5 / 40 = 26.25 m: the [20, 30) bin
        gt = (GroundTruthObject(ped, "person", 26.25),)
        dets = (Detection(ped, "person", 0.9), Detection(Box(100, 380, 130, 430), "person", 0.95))  # ghost, 15 m
        frames.append(Frame(i * 10**8, dets, gt, frame_id=str(i), episode=f"e{i % 3}"))
    data = tmp_path / "d.jsonl"
    write_jsonl_frames(data, frames)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.format(edges=EDGES, analyses="[confusion, detection_ap]").replace(
        "  bin_edges:", "  ground_camera: {fy: 700, cy: 360, height_m: 1.5}\n  bin_edges:"
    ))  # fmt: skip
    out = tmp_path / "out"
    assert main(["evaluate", str(data), "--config", str(cfg), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    bins = res["detection_ap"]["person"]["bins"]
    assert bins["[10, 20)"]["false_positives_50"] == 6 and bins["[10, 20)"]["ap"] is None
    assert bins["[20, 30)"]["false_positives_50"] == 0 and bins["[20, 30)"]["ap"] == pytest.approx(1.0)
    assert res["detection_ap"]["person"]["detections_without_distance"] == 0
    by_bin = res["confusion"]["report"]["detections_unannotated_by_bin"]["person"]  # per bin of EDGES
    assert by_bin[1] == 6 and by_bin[2] == 0


def test_stop_rule_needing_a_camera_on_camera_less_frames_is_a_warning_not_a_refused_run(tmp_path: Path) -> None:
    """The shipped stop rule (rectangle or ground corridor) cannot be placed on dataset frames without a camera:
    the run goes on, the stop evidence is missing and a warning names why (the other analyses are unaffected)."""
    from perception_safety.io.config import load_yaml

    data = tmp_path / "d.jsonl"
    write_jsonl_frames(data, scene_frames(12, 5))
    monitors = load_yaml(Path(__file__).parents[2] / "config" / "monitors.yaml")["monitors"]
    assert monitors["stop_region"]["corridor"] is not None  # the shipped rule needs the camera model
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.format(edges=EDGES, analyses="[confusion]") + yaml.safe_dump({"monitors": monitors}))
    out = tmp_path / "out"
    assert main(["evaluate", str(data), "--config", str(cfg), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    warns = [w for w in res["warnings"] if w.get("code") == "stops_not_judged"]
    assert len(warns) == 1 and "1 episode(s)" in warns[0]["message"] and "camera" in warns[0]["message"]
    assert not any(k.startswith(("false_stop", "missed_stop")) for k in res["evidence"]["cells"])
    assert res["confusion"]  # the rest of the run is there
