"""AP on cases small enough to compute by hand; the distance-bin rule for false detections; the bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.detection_ap import APRecords, ap_results, match_image
from perception_safety.evaluation.detection_ap.frames import records_from_frames

A, B, ELSEWHERE = (0, 0, 10, 10), (20, 0, 30, 10), (50, 50, 60, 60)


def _one_image(dets: list[tuple[tuple, float]], gts: list[tuple], det_d=None, gt_d=None, edges=(0.0, 100.0)):
    rec = APRecords(("ped",), edges)
    rec.add_image(
        "e", np.array([d[0] for d in dets], float).reshape(-1, 4), np.array([d[1] for d in dets]),
        np.zeros(len(dets), int), np.array(det_d if det_d is not None else [np.nan] * len(dets)),
        np.array(gts, float).reshape(-1, 4), np.zeros(len(gts), int),
        np.array(gt_d if gt_d is not None else [5.0] * len(gts)),
    )  # fmt: skip
    return ap_results(rec, n_boot=0)["ped"]


def test_two_objects_one_false_detection_between() -> None:
    # ranked: TP (recall 1/2, precision 1), FP, TP (recall 1, precision 2/3): 51 recall points at 1, 50 at 2/3
    cell = _one_image([(A, 0.9), (ELSEWHERE, 0.8), (B, 0.7)], [A, B])["pooled"]
    expected = (51 * 1.0 + 50 * 2 / 3) / 101
    assert cell["ap"] == pytest.approx(expected) and cell["ap50"] == pytest.approx(expected)
    assert (cell["ground_truth"], cell["detections"], cell["true_positives_50"], cell["false_positives_50"]) == (
        2, 3, 2, 1,
    )  # fmt: skip


def test_localisation_error_counts_only_at_strict_thresholds() -> None:
    shifted = (0, 0, 10, 7)  # IoU 0.7 with A: a match for 0.50..0.70, a false positive from 0.75
    cell = _one_image([(shifted, 0.9)], [A])["pooled"]
    assert cell["ap50"] == pytest.approx(1.0) and cell["ap75"] == pytest.approx(0.0)
    assert cell["ap"] == pytest.approx(5 / 10)  # thresholds 0.50, 0.55, 0.60, 0.65, 0.70 of ten


def test_max_detections_keeps_the_best_scores() -> None:
    m = match_image(np.array([A, ELSEWHERE, B], float), np.array([0.2, 0.9, 0.5]), np.array([A], float),
                    np.zeros(1, bool), np.zeros(1, bool), max_detections=2)  # fmt: skip
    assert m.kept.tolist() == [1, 2]  # A's detection (lowest score) is cut: the object is missed
    assert not m.tp.any()


def test_crowd_region_absorbs_detections_inside_it() -> None:
    crowd = (0, 0, 100, 100)
    m = match_image(np.array([A, B], float), np.array([0.9, 0.8]), np.array([crowd], float),
                    np.ones(1, bool), np.ones(1, bool))  # fmt: skip
    assert not m.tp.any() and not m.fp.any() and m.n_gt.tolist() == [0]  # IoU 0.01, but inside: ignored


def test_false_detection_counts_in_the_bin_of_its_estimated_distance_only() -> None:
    edges = (0.0, 10.0, 20.0)
    # object at 5 m found; a false detection estimated at 15 m: a FP of [10, 20) and of pooled, not of [0, 10)
    res = _one_image([(A, 0.9), (ELSEWHERE, 0.95)], [A], det_d=[5.0, 15.0], gt_d=[5.0], edges=edges)
    assert res["bins"]["[0, 10)"]["ap"] == pytest.approx(1.0)
    assert res["bins"]["[0, 10)"]["false_positives_50"] == 0
    assert res["bins"]["[10, 20)"]["false_positives_50"] == 1 and res["bins"]["[10, 20)"]["ap"] is None
    assert res["pooled"]["false_positives_50"] == 1 and res["pooled"]["ap"] < 1.0
    # without an estimate it is a false positive of pooled only, and counted as such
    res = _one_image([(A, 0.9), (ELSEWHERE, 0.95)], [A], gt_d=[5.0], edges=edges)
    assert res["bins"]["[0, 10)"]["false_positives_50"] == 0 and res["pooled"]["false_positives_50"] == 1
    assert res["detections_without_distance"] == 1  # the false one; the matched one needs no distance


def test_detection_of_an_object_in_another_bin_is_neither_true_nor_false_there() -> None:
    res = _one_image([(A, 0.9)], [A], det_d=[np.nan], gt_d=[15.0], edges=(0.0, 10.0, 20.0))
    assert res["bins"]["[0, 10)"]["detections"] == 0 and res["bins"]["[10, 20)"]["true_positives_50"] == 1


def _frames(episode: str, found: bool, n: int = 4) -> list[Frame]:
    det = (Detection(Box(*A), "pedestrian", 0.9),) if found else ()
    gt = (GroundTruthObject(Box(*A), "pedestrian", 5.0),)
    return [Frame(i, det, gt, frame_id=f"{episode}/{i}") for i in range(n)]


def test_bootstrap_over_episodes_brackets_the_estimate_and_needs_two_episodes() -> None:
    cfg = ConfusionConfig(bin_edges=[0.0, 10.0])
    # recall 16/24: the recall points 0, 0.01, ..., 0.66 at precision 1
    frames = [f for e in range(6) for f in _frames(f"ep{e}", found=e % 3 != 0)]
    rec = records_from_frames(frames, cfg, lambda f: f.frame_id.split("/")[0])
    cell = ap_results(rec, n_boot=300, seed=1)["ped"]["pooled"]
    assert cell["ap"] == pytest.approx(67 / 101) and cell["episodes"] == 6
    assert cell["ap_lower"] < cell["ap"] < cell["ap_upper"]
    assert "6 episodes" in cell["interval_note"]
    one = ap_results(records_from_frames(frames, cfg, lambda f: "all"), n_boot=300)["ped"]["pooled"]
    assert one["ap_lower"] is None and "1 episode" in one["interval_note"]


def test_records_merge_like_one_pass() -> None:
    cfg = ConfusionConfig(bin_edges=[0.0, 10.0])
    a, b = _frames("a", True), _frames("b", False)
    whole = ap_results(records_from_frames(a + b, cfg, lambda f: f.frame_id[0]), n_boot=50)
    parts = records_from_frames(a, cfg, lambda f: "a").merge(records_from_frames(b, cfg, lambda f: "b"))
    assert ap_results(APRecords.from_json(parts.to_json()), n_boot=50) == whole


def test_ignore_region_without_a_class_absorbs_detections_of_every_class() -> None:
    rec = APRecords(("ped", "car"), (0.0, 100.0))
    region = (0, 0, 100, 100)
    rec.add_image(
        "e", np.array([A, B, ELSEWHERE], float), np.array([0.9, 0.8, 0.7]), np.array([0, 1, 1]),
        np.full(3, np.nan), np.array([region, (200, 0, 210, 10)], float), np.array([-1, 1]), np.array([5.0, 5.0]),
        np.array([True, False]),
    )  # fmt: skip
    res = ap_results(rec, n_boot=0)
    assert res["ped"]["pooled"]["detections"] == 0  # inside the class-less region: neither true nor false
    assert res["car"]["pooled"]["false_positives_50"] == 0 and res["car"]["pooled"]["ground_truth"] == 1
