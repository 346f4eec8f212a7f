"""A batch matched once (`MatchedRows`) counts every selection exactly as matching the selected batch again:
frame selections against ``add_batch(select_frames(...))``, band selections against
``add_batch(select_objects(...))``, on random batches with IoU ties, empty frames, NaN boxes and distances,
unmapped labels, several episodes and empty selections."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.ground_distance import GroundCamera
from perception_safety.evaluation.confusion.rows import MatchedRows, matched_rows
from perception_safety.evaluation.confusion.subset import select_frames, select_objects
from tests.evaluation.confusion.batches import random_batch

CLASSES = {"ped": ["pedestrian"], "car": ["car"]}
CONFIGS = {
    "iou": ConfusionConfig(classes=CLASSES, bin_edges=[5.0, 15.0, 25.0, 35.0]),
    "class_aware_camera": ConfusionConfig(
        classes=CLASSES, bin_edges=[0.0, 10.0, 20.0, 40.0], class_aware=True, iou_threshold=0.3,
        ground_camera=GroundCamera(fy=50.0, cy=20.0, height_m=1.5),
    ),
    "centre_distance": ConfusionConfig(classes=CLASSES, bin_edges=[5.0, 15.0, 25.0, 35.0],
                                       matching="centre_distance", centre_distance_m=4.0),
    "track_window": ConfusionConfig(classes=CLASSES, bin_edges=[5.0, 15.0, 25.0, 35.0], sample_unit="track_window",
                                    track_window_s=0.5),
}  # fmt: skip


def episode_batch(seed: int, n_frames: int = 120) -> FrameBatch:
    """A random batch as an evaluate episode holds it: stamps, track ids (some blank), episodes (two, some frames
    unknown), carried distances (some NaN), NaN / out-of-range object distances, unmapped-label counts."""
    rng = np.random.default_rng(seed)
    b = random_batch(rng, n_frames)
    ng, nd = len(b.gt_boxes), len(b.det_boxes)
    dist = b.gt_distances.copy()
    dist[rng.random(ng) < 0.05] = np.nan
    dist[rng.random(ng) < 0.05] = 99.0
    carried = np.where(rng.random(nd) < 0.3, rng.uniform(0, 40, nd), np.nan)
    tracks = np.array([f"t{int(k)}" if rng.random() < 0.9 else "" for k in rng.integers(0, 6, ng)], dtype=object)
    episodes = np.array([("a", "b", "")[int(k)] for k in rng.choice(3, n_frames, p=[0.5, 0.4, 0.1])], dtype=object)
    return replace(
        b, gt_distances=dist, det_distances=carried, gt_tracks=tracks, frame_episodes=episodes,
        frame_stamps=np.arange(n_frames, dtype=np.int64) * 100_000_000, det_scores=rng.random(nd),
        unmapped_detections=Counter({"bicycle": 3}), unmapped_ground_truth=Counter({"dog": 2}),
    )  # fmt: skip


def assert_same(got: ConfusionAccumulator, want: ConfusionAccumulator) -> None:
    """Every count an accumulator holds, its report and its per-episode counts."""
    a, b = got.result("s"), want.result("s")
    for name in ("class_cm", "prop_cm", "class_cm_pooled", "prop_cm_pooled"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.report == b.report
    np.testing.assert_array_equal(got.unannotated_by_bin, want.unannotated_by_bin)
    assert (a.clusters is None) == (b.clusters is None)
    if a.clusters is not None:
        assert a.clusters.ids == b.clusters.ids
        for name in ("class_cm", "class_cm_pooled", "unmatched", "frames"):
            np.testing.assert_array_equal(getattr(a.clusters, name), getattr(b.clusters, name), err_msg=name)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(6))
def test_frame_selections_count_what_the_selected_batch_counts(name, seed):
    cfg = CONFIGS[name]
    batch = episode_batch(seed)
    rows = MatchedRows.of(batch, cfg)
    rng = np.random.default_rng(100 + seed)
    n = batch.n_frames
    episodes = batch.frame_episodes
    masks = [rng.random(n) < q for q in (0.1, 0.5, 0.9)] + [
        np.zeros(n, dtype=bool), np.ones(n, dtype=bool), episodes == "a", episodes == "", np.arange(n) == 7,
        np.diff(batch.gt_offsets) == 0,  # only frames without objects
    ]  # fmt: skip
    for keep in masks:
        assert_same(ConfusionAccumulator(cfg).add_rows(rows.select_frames(keep)),
                    ConfusionAccumulator(cfg).add_batch(select_frames(batch, keep)))  # fmt: skip
    # All rows: the whole batch, its unmapped labels included.
    assert_same(ConfusionAccumulator(cfg).add_rows(rows), ConfusionAccumulator(cfg).add_batch(batch))
    assert ConfusionAccumulator(cfg).add_rows(rows).report()["detections_unmapped"] == {"bicycle": 3}


def test_the_selections_meet_the_hungarian_fallback():
    """The random batches hold frames the per-frame Hungarian solves; their count follows the selection."""
    cfg = CONFIGS["iou"]
    batch = episode_batch(0, 400)
    rows = MatchedRows.of(batch, cfg)
    assert len(rows.hard_frame) > 2
    keep = np.zeros(batch.n_frames, dtype=bool)
    keep[rows.hard_frame[::2]] = True
    got = ConfusionAccumulator(cfg).add_rows(rows.select_frames(keep)).report()
    assert got["hungarian_fallback_frames"] == len(rows.hard_frame[::2])
    assert got == ConfusionAccumulator(cfg).add_batch(select_frames(batch, keep)).report()


def bands(batch: FrameBatch, edges: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Height band of every detection and object (-1 below the first edge; NaN heights in the last band)."""
    e = np.asarray(edges)
    gt = np.searchsorted(e, batch.gt_boxes[:, 3] - batch.gt_boxes[:, 1], side="right") - 1
    det = np.searchsorted(e, batch.det_boxes[:, 3] - batch.det_boxes[:, 1], side="right") - 1
    return det, gt


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(6))
def test_band_selections_count_what_matching_the_band_alone_counts(name, seed):
    """Restricting the boxes changes the matching (a detection's best object may be in another band): rows matched
    with pairs only within a band equal matching each band's boxes on their own."""
    cfg = CONFIGS[name]
    batch = episode_batch(seed, 200)
    det_band, gt_band = bands(batch, [4.0, 8.0, 12.0])
    rows = MatchedRows.of(batch, cfg, (det_band, gt_band))
    for k in (-1, 0, 1, 2, 3):
        want = ConfusionAccumulator(cfg).add_batch(select_objects(batch, gt_band == k, det_band == k))
        assert_same(ConfusionAccumulator(cfg).add_rows(rows.select_band(k)), want)


def test_band_restriction_changes_the_matching():
    """Why bands are matched apart: on these batches a band's matching differs from the whole batch's, restricted."""
    cfg = CONFIGS["iou"]
    batch = episode_batch(1, 300)
    det_band, gt_band = bands(batch, [4.0, 8.0, 12.0])
    whole = MatchedRows.of(batch, cfg)
    by_band = MatchedRows.of(batch, cfg, (det_band, gt_band))
    assert (whole.gt_pred != by_band.gt_pred).any()
    with pytest.raises(ValueError, match="groups"):
        whole.select_band(0)


def test_matched_rows_reuses_the_match_of_the_same_batch_object():
    cfg = CONFIGS["iou"]
    batch = episode_batch(2)
    rows = matched_rows(batch, cfg)
    assert matched_rows(batch, cfg) is rows
    assert matched_rows(replace(batch), cfg) is not rows  # another object: matched again
    assert matched_rows(batch, CONFIGS["class_aware_camera"]) is not rows


def test_rows_of_another_config_are_refused():
    """Rows carry the matching and bins of their config: counting them with another would be a silent wrong number."""
    batch = episode_batch(3)
    rows = MatchedRows.of(batch, CONFIGS["iou"])
    ConfusionAccumulator(CONFIGS["iou"].model_copy()).add_rows(rows)  # an equal config is the same config
    with pytest.raises(ValueError, match="another confusion config"):
        ConfusionAccumulator(CONFIGS["class_aware_camera"]).add_rows(rows.select_frames(np.ones(batch.n_frames, bool)))


def test_many_batches_into_one_accumulator_count_each_episode_once():
    """An accumulator fed chunk by chunk (the `confusion` command over many bags) holds the per-episode counts of
    the whole batch: chunks of several episodes, episodes spread over chunks (merged when read, in one pass)."""
    cfg = CONFIGS["iou"]
    batch = replace(episode_batch(5, 300), frame_episodes=np.array([f"e{(f // 7) % 40}" for f in range(300)],
                                                                    dtype=object))  # fmt: skip
    whole = ConfusionAccumulator(cfg).add_batch(batch).result().clusters
    acc = ConfusionAccumulator(cfg)
    for start in range(0, 300, 11):
        keep = (np.arange(300) >= start) & (np.arange(300) < start + 11)
        acc.add_batch(select_frames(batch, keep))
    got = acc.result().clusters
    assert whole is not None and got is not None and sorted(got.ids) == sorted(whole.ids) and len(got.ids) == 40
    assert got.ids[:3] == ("e0", "e1", "e2")  # first appearance
    order = [whole.ids.index(i) for i in got.ids]
    for name in ("class_cm", "class_cm_pooled", "unmatched", "frames"):
        np.testing.assert_array_equal(getattr(got, name), getattr(whole, name)[order])
