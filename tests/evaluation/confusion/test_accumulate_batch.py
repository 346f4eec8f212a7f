"""`ConfusionAccumulator.add_batch` on random columnar batches against Algorithms 1-2 written frame by frame over the
same arrays: both matrix types per bin and pooled, the report's counters and the per-episode counts, with NaN
boxes, NaN and out-of-range distances, frames without detections or objects, and IoU ties."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.confusion.subset import select_frames
from perception_safety.evaluation.confusion.types import subset_lookup
from tests.evaluation.confusion.batches import per_frame, random_batch

EDGES = [5.0, 15.0, 25.0, 35.0]


def reference(batch, frames: list[int], edges: list[float], thr: float, class_aware: bool, n_cls: int = 2):
    """Class and proposition matrices of ``frames`` and the report counters, one frame and one object at a time."""
    k, c1 = len(edges) - 1, n_cls + 1
    lut = subset_lookup(n_cls)
    p = len(lut)
    cls = np.zeros((k, c1, c1), dtype=int)
    prop = np.zeros((k, p, p), dtype=int)
    counters = dict.fromkeys(("binned", "below", "beyond", "matched", "matched_out", "unannotated"), 0)
    unannotated_by_class = np.zeros(n_cls, dtype=int)
    match = per_frame(batch, thr, class_aware)
    for f in frames:
        g0, g1 = int(batch.gt_offsets[f]), int(batch.gt_offsets[f + 1])
        d0, d1 = int(batch.det_offsets[f]), int(batch.det_offsets[f + 1])
        matched_dets = set()
        for b in range(k):
            true_set, pred_set = 0, 0
            for g in range(g0, g1):
                d = float(batch.gt_distances[g])
                if not edges[b] <= d < edges[b + 1]:
                    continue
                true = int(batch.gt_classes[g])
                pred = int(batch.det_classes[match[g]]) if match[g] >= 0 else n_cls
                cls[b, pred, true] += 1
                true_set |= 1 << true
                if pred < n_cls:
                    pred_set |= 1 << pred
            if not true_set:
                cls[b, n_cls, n_cls] += 1
            prop[b, lut[pred_set], lut[true_set]] += 1
        for g in range(g0, g1):
            d = float(batch.gt_distances[g])
            binned = edges[0] <= d < edges[-1]
            counters["binned"] += binned
            counters["below"] += d < edges[0]
            counters["beyond"] += d >= edges[-1]
            if match[g] >= 0:
                matched_dets.add(int(match[g]))
                counters["matched_out"] += not binned
        counters["matched"] += len(matched_dets)
        for d in range(d0, d1):
            if d not in matched_dets:
                counters["unannotated"] += 1
                unannotated_by_class[batch.det_classes[d]] += 1
    return cls, prop, counters, unannotated_by_class


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("thr", [0.3, 0.5])
def test_add_batch_equals_per_frame_algorithms(seed: int, thr: float) -> None:
    rng = np.random.default_rng(100 + seed)
    batch = random_batch(rng, 70)
    dist = rng.uniform(0.0, 40.0, len(batch.gt_boxes))  # below, in and beyond the edges
    dist[rng.random(len(dist)) < 0.05] = np.nan  # not binned, not below, not beyond: as the search puts it
    dist[rng.random(len(dist)) < 0.05] = 15.0  # exactly on an edge
    episodes = np.array(["ep-a" if f % 3 else "ep-b" for f in range(batch.n_frames)], dtype=object)
    batch = replace(batch, gt_distances=dist, frame_episodes=episodes)
    for class_aware in (False, True):
        cfg = ConfusionConfig(classes={"a": ["a"], "b": ["b"]}, bin_edges=EDGES, iou_threshold=thr,
                              class_aware=class_aware)
        acc = ConfusionAccumulator(cfg).add_batch(batch)
        frames = list(range(batch.n_frames))
        cls, prop, counters, by_class = reference(batch, frames, EDGES, thr, class_aware)
        assert acc.class_cm.tolist() == cls.tolist()
        assert acc.prop_cm.tolist() == prop.tolist()
        cls1, prop1, _, _ = reference(batch, frames, [EDGES[0], EDGES[-1]], thr, class_aware)
        assert acc.class_cm_pooled.tolist() == cls1[0].tolist()
        assert acc.prop_cm_pooled.tolist() == prop1[0].tolist()
        r = acc.report()
        assert r["frames"] == batch.n_frames
        assert r["detections"] == len(batch.det_boxes)
        assert r["ground_truth_binned"] == counters["binned"]
        assert r["ground_truth_below_range"] == counters["below"]
        assert r["ground_truth_beyond_range"] == counters["beyond"]
        assert r["detections_matched"] == counters["matched"]
        assert r["detections_matched_out_of_range"] == counters["matched_out"]
        assert r["detections_unannotated"] == counters["unannotated"]
        assert list(r["detections_unannotated_by_class"].values()) == by_class.tolist()
        clusters = acc.result().clusters
        assert clusters is not None and clusters.ids == ("ep-a", "ep-b")
        for i, name in enumerate(clusters.ids):
            mine = [f for f in frames if episodes[f] == name]
            cls_e, _, _, by_class_e = reference(batch, mine, EDGES, thr, class_aware)
            assert clusters.class_cm[i].tolist() == cls_e.tolist()
            assert clusters.frames[i] == len(mine)
            assert clusters.unmatched[i].sum(axis=0).tolist() == by_class_e.tolist()
            # The episode's frames alone (one episode: the accumulator's own counts are the cluster's).
            one = ConfusionAccumulator(cfg).add_batch(select_frames(batch, episodes == name)).result().clusters
            assert one is not None and one.ids == (name,) and one.frames.tolist() == [len(mine)]
            assert one.class_cm[0].tolist() == cls_e.tolist()
            assert one.unmatched[0].sum(axis=0).tolist() == by_class_e.tolist()
            np.testing.assert_array_equal(one.class_cm_pooled[0], clusters.class_cm_pooled[i])
            np.testing.assert_array_equal(one.unmatched[0], clusters.unmatched[i])


def test_batch_without_frames_or_objects() -> None:
    cfg = ConfusionConfig(classes={"a": ["a"]}, bin_edges=EDGES)
    empty = random_batch(np.random.default_rng(0), 0)
    acc = ConfusionAccumulator(cfg).add_batch(empty)
    assert acc.class_cm.sum() == 0 and acc.prop_cm.sum() == 0 and acc.report()["frames"] == 0
    z = np.zeros((0, 4))
    three = replace(
        empty,
        det_offsets=np.zeros(4, dtype=np.int64),
        gt_offsets=np.zeros(4, dtype=np.int64),
        det_boxes=z,
        gt_boxes=z,
    )
    acc = ConfusionAccumulator(cfg).add_batch(three)
    assert acc.class_cm[:, 1, 1].tolist() == [3, 3, 3]  # every (frame, bin) without objects: (empty, empty)
    assert acc.prop_cm[:, 1, 1].tolist() == [3, 3, 3] and acc.prop_cm_pooled[1, 1] == 3
