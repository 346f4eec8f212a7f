"""COCO-style AP equals the COCO reference evaluator (pycocotools) on random data built here.

The data cover what the COCO rule is known for: crowd regions (absorbing any number of detections, overlap
over the detection's area), images with more detections than the max-detections cut, several classes, classes
without ground truth (AP undefined) and images without detections. Distance bins are checked against
pycocotools' *area ranges* with each object's distance put in its ``area`` field: the COCO rule for a range
(ground truth outside ignored, an unmatched detection outside ignored) is the rule used per distance bin.
"""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from perception_safety.evaluation.detection_ap import APRecords, ap_results

CLASSES = ("person", "car", "bicycle")


def _scene(seed: int, n_images: int = 40, crowd: bool = True) -> tuple[dict, list[dict]]:
    """A COCO ground-truth document and a result list; every object carries a distance in its 'area' slot."""
    rng = np.random.default_rng(seed)
    images, anns, results = [], [], []
    for img in range(1, n_images + 1):
        images.append({"id": img, "width": 640, "height": 480, "file_name": f"{img}.png"})
        n_gt = rng.integers(0, 8)
        boxes = []
        for _ in range(n_gt):
            x, y = rng.uniform(0, 560), rng.uniform(0, 400)
            w, h = rng.uniform(8, 80), rng.uniform(8, 80)
            cat = int(rng.integers(1, 3))  # bicycle (3) never has ground truth
            is_crowd = int(crowd and rng.random() < 0.12)
            if is_crowd:
                w, h = w * 2.5, h * 2.5
            anns.append({"id": len(anns) + 1, "image_id": img, "category_id": cat, "bbox": [x, y, w, h],
                         "iscrowd": is_crowd, "distance": float(rng.uniform(1, 59))})  # fmt: skip
            boxes.append((cat, x, y, w, h))
        n_det = 130 if img % 13 == 0 else int(rng.integers(0, 10))  # some images past the 100-detection cut
        for _ in range(n_det):
            if boxes and rng.random() < 0.7:  # near a ground-truth box
                cat, x, y, w, h = boxes[rng.integers(len(boxes))]
                jitter = rng.normal(0, 0.12, 4) * [w, h, w, h]
                x, y, w, h = x + jitter[0], y + jitter[1], max(2.0, w + jitter[2]), max(2.0, h + jitter[3])
                cat = cat if rng.random() < 0.9 else int(rng.integers(1, 4))
            else:
                x, y, w, h = rng.uniform(0, 560), rng.uniform(0, 400), rng.uniform(8, 80), rng.uniform(8, 80)
                cat = int(rng.integers(1, 4))
            results.append({"image_id": img, "category_id": cat, "bbox": [float(x), float(y), float(w), float(h)],
                            "score": float(rng.random()), "distance": float(rng.uniform(1, 59))})  # fmt: skip
    cats = [{"id": i + 1, "name": n} for i, n in enumerate(CLASSES)]
    return {"images": images, "annotations": anns, "categories": cats}, results


def _coco(gt_doc: dict, results: list[dict], area_ranges: list[list[float]] | None = None) -> COCOeval:
    gt = COCO()
    gt.dataset = {**gt_doc, "annotations": [{**a, "area": a["distance"]} for a in gt_doc["annotations"]]}
    gt.createIndex()
    dt = gt.loadRes([dict(r) for r in results])
    for ann in dt.dataset["annotations"]:
        ann["area"] = next(r["distance"] for r in [results[ann["id"] - 1]])  # loadRes numbers results from 1
    ev = COCOeval(gt, dt, "bbox")
    if area_ranges is not None:
        ev.params.areaRng = area_ranges
        ev.params.areaRngLbl = [str(i) for i in range(len(area_ranges))]
    ev.evaluate()
    ev.accumulate()
    return ev


def _records(gt_doc: dict, results: list[dict], edges: tuple[float, ...]) -> APRecords:
    rec = APRecords(CLASSES, edges)
    for im in gt_doc["images"]:
        g = [a for a in gt_doc["annotations"] if a["image_id"] == im["id"]]
        d = [r for r in results if r["image_id"] == im["id"]]

        def xyxy(items: list[dict]) -> np.ndarray:
            return np.array([[b[0], b[1], b[0] + b[2], b[1] + b[3]] for b in (i["bbox"] for i in items)]).reshape(-1, 4)

        rec.add_image(
            str(im["id"]),
            xyxy(d), np.array([r["score"] for r in d]), np.array([r["category_id"] - 1 for r in d]),
            np.array([r["distance"] for r in d]),
            xyxy(g), np.array([a["category_id"] - 1 for a in g]), np.array([a["distance"] for a in g]),
            np.array([bool(a["iscrowd"]) for a in g]),
        )  # fmt: skip
    return rec


def _coco_cell(ev: COCOeval, k: int, a: int) -> tuple[float, float, float] | None:
    p = ev.eval["precision"][:, :, k, a, 2]  # all thresholds, 101 recall points, class k, range a, maxDets 100
    if (p <= -1).all():
        return None
    return float(p.mean()), float(p[0].mean()), float(p[5].mean())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pooled_ap_per_class_equals_pycocotools(seed: int) -> None:
    gt_doc, results = _scene(seed)
    ev = _coco(gt_doc, results)
    ours = ap_results(_records(gt_doc, results, (0.0, 1e6)), n_boot=0)
    for k, name in enumerate(CLASSES):
        ref = _coco_cell(ev, k, 0)
        cell = ours[name]["pooled"]
        if ref is None:
            assert cell["ap"] is None and cell["ground_truth"] == 0
            continue
        assert (cell["ap"], cell["ap50"], cell["ap75"]) == pytest.approx(ref, abs=1e-12), name
    assert ours["person"]["pooled"]["ap"] not in (0.0, 1.0)  # a non-trivial case


def test_per_distance_bin_ap_equals_pycocotools_area_ranges() -> None:
    gt_doc, results = _scene(7, n_images=60)
    edges = (0.0, 20.0, 40.0, 60.0)
    ranges = [[0.0, 60.0], [0.0, 20.0], [20.0, 40.0], [40.0, 60.0]]
    ev = _coco(gt_doc, results, ranges)
    ours = ap_results(_records(gt_doc, results, edges), n_boot=0)
    checked = 0
    for k, name in enumerate(CLASSES):
        cells = [ours[name]["pooled"], *ours[name]["bins"].values()]
        for a, cell in enumerate(cells):
            ref = _coco_cell(ev, k, a)
            if ref is None:
                assert cell["ap"] is None
                continue
            assert (cell["ap"], cell["ap50"], cell["ap75"]) == pytest.approx(ref, abs=1e-12), (name, ranges[a])
            checked += 1
    assert checked >= 8
    assert list(ours["car"]["bins"]) == ["[0, 20)", "[20, 40)", "[40, 60)"]


def test_without_crowd_and_with_the_max_detection_cut_active() -> None:
    gt_doc, results = _scene(11, crowd=False)
    assert max(sum(r["image_id"] == i for r in results) for i in range(1, 41)) > 100
    ev = _coco(gt_doc, results)
    ours = ap_results(_records(gt_doc, results, (0.0, 1e6)), n_boot=0)
    for k, name in enumerate(CLASSES[:2]):
        assert (ours[name]["pooled"]["ap"],) == pytest.approx((_coco_cell(ev, k, 0)[0],), abs=1e-12)
