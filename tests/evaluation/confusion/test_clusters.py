"""Per-episode counts of the class-labeled matrices (the sampling unit) and unmatched detections per bin."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import (
    ConfusionAccumulator,
    confusion_from_frames,
    sum_confusions,
)
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.ground_distance import GroundCamera, ground_distance
from perception_safety.evaluation.confusion.io import confusion_from_mapping, to_json_dict
from perception_safety.evaluation.confusion.metrics import class_metrics

from .test_accumulate import random_frames

CFG = ConfusionConfig(classes={"a": ["a"], "b": ["b"]}, bin_edges=[0, 10, 20, 30, 40], chunk_frames=7)


def _episodes(seed: int, n_eps: int = 4) -> tuple[list[Frame], list[str]]:
    rng = np.random.default_rng(seed)
    frames = random_frames(rng, 60, 45.0, ("a", "b"))
    names = [f"ep{int(i)}" for i in rng.integers(0, n_eps, len(frames))]
    return [replace(f, episode=e) for f, e in zip(frames, names, strict=True)], names


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cluster_counts_are_each_episode_alone_and_sum_to_the_matrices(seed: int) -> None:
    frames, names = _episodes(seed)
    dc = confusion_from_frames(frames, CFG)
    cl = dc.clusters
    assert cl is not None and set(cl.ids) == set(names)
    assert cl.class_cm.sum(axis=0).tolist() == dc.class_cm.tolist()
    assert cl.class_cm_pooled.sum(axis=0).tolist() == dc.class_cm_pooled.tolist()
    for i, ep in enumerate(cl.ids):
        alone = confusion_from_frames([f for f in frames if f.episode == ep], CFG)
        assert cl.class_cm[i].tolist() == alone.class_cm.tolist()
        assert cl.class_cm_pooled[i].tolist() == alone.class_cm_pooled.tolist()
        assert int(cl.frames[i]) == alone.report["frames"]
        assert cl.unmatched[i].sum(axis=0).tolist() == list(alone.report["detections_unannotated_by_class"].values())
        for bins in ([1], [0, 2]):  # per-episode column and row over a union of bins
            want = alone.class_cm[bins].sum(axis=0)
            assert cl.column(0, bins)[i].tolist() == want[:, 0].tolist()
            assert cl.row(1, bins)[i].tolist() == want[1, :].tolist()


def test_default_episode_json_round_trip_and_merge_by_id() -> None:
    frames, _ = _episodes(5)
    bare = [replace(f, episode="") for f in frames]
    parts = [ConfusionAccumulator(CFG, episode=name).add_frames(bare[i::2]).result() for i, name in enumerate("xy")]
    again = ConfusionAccumulator(CFG, episode="x").add_frames(bare[:3]).result()
    total = sum_confusions([confusion_from_mapping(to_json_dict(p)) for p in [*parts, again]])
    assert total.clusters is not None and total.clusters.ids == ("x", "y")
    assert total.clusters.class_cm.sum(axis=0).tolist() == total.class_cm.tolist()
    assert total.clusters.frames.tolist() == [30 + 3, 30]


def test_frames_without_episode_give_no_cluster_information() -> None:
    frames, _ = _episodes(6)
    dc = confusion_from_frames([*frames[:10], replace(frames[10], episode="")], CFG)
    assert dc.clusters is None and dc.report["frames_without_episode"] == 1
    rows = class_metrics(dc)
    assert all(r.clusters is None for r in rows)  # plain Clopper-Pearson, stated as such


def test_ground_distance_by_hand_and_above_the_horizon() -> None:
    cam = GroundCamera(fy=100.0, cy=50.0, height_m=1.5)
    d = ground_distance(np.array([60.0, 150.0, 50.0, 20.0]), cam)
    assert d[0] == pytest.approx(15.0) and d[1] == pytest.approx(1.5)
    assert math.isnan(d[2]) and math.isnan(d[3])
    tilted = GroundCamera(fy=100.0, cy=50.0, height_m=1.5, pitch_rad=-math.atan(0.1))  # looks down: horizon up
    assert ground_distance(np.array([50.0]), tilted)[0] == pytest.approx(15.0)


def test_unmatched_detections_counted_per_bin_with_a_ground_camera() -> None:
    cam = GroundCamera(fy=100.0, cy=50.0, height_m=1.5)
    cfg = CFG.model_copy(update={"ground_camera": cam})
    truth = GroundTruthObject(Box(0, 40, 10, 60), "a", 15.0)
    frames = [
        Frame(0, (Detection(Box(0, 40, 10, 60), "a"), Detection(Box(50, 50, 60, 60), "a")), (truth,), episode="e"),
        Frame(1, (Detection(Box(50, 20, 60, 30), "a"),), (truth,), episode="e"),  # above the horizon
    ]
    dc = confusion_from_frames(frames, cfg)
    assert dc.report["detections_unannotated_by_bin"]["a"] == [0, 1, 0, 0]
    assert dc.report["detections_unannotated_without_distance"] == 1
    rows = {(r.bin, r.label): r for r in class_metrics(dc)}
    assert rows[("1", "a")].precision == pytest.approx(1 / 2)  # 1 TP, 1 unmatched placed at 15 m
    assert rows[("1", "a")].precision_matched_only == 1.0
    assert rows[("pooled", "a")].precision == pytest.approx(1 / 3)
    # Without the camera the bins have no precision (only the matched-only one), pooled stays 1/3.
    plain = {(r.bin, r.label): r for r in class_metrics(confusion_from_frames(frames, CFG))}
    assert plain[("1", "a")].precision is None and plain[("pooled", "a")].precision == pytest.approx(1 / 3)


def test_reference_matrices_keep_plain_clopper_pearson(tmp_path) -> None:
    from pathlib import Path

    from perception_safety.evaluation.confusion.io import load_matrices
    from perception_safety.evaluation.intervals import clopper_pearson

    ref = load_matrices(Path(__file__).parents[3] / "reference" / "dist_confusion_matrices_nuscenes_yolov3.json")
    assert ref.clusters is None
    r = next(m for m in class_metrics(ref) if m.bin == "0" and m.label == ref.class_labels[0])
    lo, hi = clopper_pearson(r.true_positives, r.ground_truth)
    assert (r.recall_lower, r.recall_upper) == (float(lo), float(hi)) and r.recall_design_effect == 1.0


@pytest.mark.parametrize("pitch_deg", [0.0, -5.0, 3.0])
def test_ground_distance_equals_the_monitors_flat_ground_back_projection(pitch_deg: float) -> None:
    # Independent implementation: the metric monitor regions' camera (monitors/regions/ground.py), x forward.
    from perception_safety.core.camera import Intrinsics
    from perception_safety.monitors.regions.ground import GroundCamera as RegionCamera

    k = Intrinsics(fx=700.0, fy=690.0, cx=640.0, cy=360.0, width=1280, height=720)
    pitch = math.radians(pitch_deg)
    rows = np.linspace(380.0, 719.0, 25)
    x, _, hit = RegionCamera(k, 1.4, pitch).to_ground(np.full_like(rows, 640.0), rows)
    ours = ground_distance(rows, GroundCamera(fy=690.0, cy=360.0, height_m=1.4, pitch_rad=pitch))
    assert np.allclose(ours[hit], x[hit]) and np.isnan(ours[~hit]).all()


def test_merge_all_equals_merging_part_by_part() -> None:
    """The reduce's one-pass merge: the same ids in the same order (first appearance) and the same sums as merging
    the parts one after the other, with repeated, new and empty parts."""
    from perception_safety.evaluation.confusion.clusters import ClusterCounts, merge_all

    rng = np.random.default_rng(4)
    k, c1 = 3, 3

    def part(ids: tuple[str, ...]) -> ClusterCounts:
        n = len(ids)
        return ClusterCounts(ids, rng.integers(0, 9, (n, k, c1, c1)), rng.integers(0, 9, (n, c1, c1)),
                             rng.integers(0, 9, (n, k + 1, c1 - 1)), rng.integers(1, 50, n))  # fmt: skip

    parts = [part(ids) for ids in [("e3",), ("e1", "e2"), (), ("e2",), ("e4", "e3"), ("e1",), (), ("e5",)]]
    want = parts[0]
    for p in parts[1:]:
        want = want.merge(p)
    got = merge_all(parts)
    assert got is not None and got.ids == want.ids == ("e3", "e1", "e2", "e4", "e5")
    for name in ("class_cm", "class_cm_pooled", "unmatched", "frames"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert merge_all([*parts, None]) is None
    bad = ClusterCounts(("x",), np.zeros((1, k + 1, c1, c1)), np.zeros((1, c1, c1)), np.zeros((1, k + 2, c1 - 1)),
                        np.zeros(1))  # fmt: skip
    with pytest.raises(ValueError, match="different bins"):
        merge_all([*parts, bad])
