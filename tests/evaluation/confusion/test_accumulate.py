"""Distance-binned confusion matrices (Algorithms 1-2) against hand counts and an independent per-frame loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.core import Box, Detection, Frame, GroundTruthObject, match_boxes
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, confusion_from_frames
from perception_safety.evaluation.confusion.config import ConfusionConfig

PED_OBS = {"ped": ["ped", "human.*"], "obs": ["obs", "vehicle.*"]}


def det(x0: float, x1: float, cls: str, y0: float = 0.0, y1: float = 10.0) -> Detection:
    return Detection(Box(x0, y0, x1, y1), cls, 0.9)


def gt(x0: float, x1: float, cls: str, distance: float, y0: float = 0.0, y1: float = 10.0) -> GroundTruthObject:
    return GroundTruthObject(Box(x0, y0, x1, y1), cls, distance)


def hand_scene() -> list[Frame]:
    a = Frame(
        0,
        detections=(det(0, 10, "ped"), det(20, 30, "ped"), det(60, 70, "obs"), det(100, 110, "obs", 100, 110)),
        ground_truth=(gt(0, 10, "ped", 5), gt(20, 30, "obs", 5), gt(40, 50, "obs", 15), gt(60, 70, "ped", 35)),
    )
    b = Frame(1, detections=(det(0, 10, "ped", 50, 60),))
    c = Frame(
        2,
        detections=(det(1, 11, "obs"), det(20, 30, "ped"), det(40, 50, "obs", 0, 14), det(80, 90, "traffic light")),
        ground_truth=(gt(0, 10, "ped", 25), gt(20, 30, "ped", 29.9), gt(40, 50, "obs", 10.0), gt(200, 210, "tree", 3)),
    )
    return [a, b, c]


CFG = ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10, 20, 30])


def test_labels_follow_the_paper_order() -> None:
    dc = confusion_from_frames([], CFG)
    assert dc.class_labels == ("ped", "obs", "empty")
    assert dc.prop_labels == ("ped", "obs", "ped,obs", "empty")
    three = confusion_from_frames([], ConfusionConfig(classes={"a": ["a"], "b": ["b"], "c": ["c"]}))
    assert three.prop_labels == ("a", "b", "c", "a,b", "a,c", "b,c", "a,b,c", "empty")


def test_class_matrices_of_hand_scene() -> None:
    dc = confusion_from_frames(hand_scene(), CFG)
    assert dc.class_cm[0].tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 2]]
    assert dc.class_cm[1].tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 1]]
    assert dc.class_cm[2].tolist() == [[1, 0, 0], [1, 0, 0], [0, 0, 2]]
    assert dc.class_cm_pooled.tolist() == [[2, 1, 0], [1, 1, 0], [0, 1, 1]]


def test_proposition_matrices_of_hand_scene() -> None:
    dc = confusion_from_frames(hand_scene(), CFG)
    expected = np.zeros((3, 4, 4), dtype=int)
    expected[0, 0, 2] = 1  # frame a: true {ped, obs}, predicted {ped}
    expected[0, 3, 3] = 2  # frames b, c: nothing in 0-10 m
    expected[1, 3, 1] = 1  # frame a: obs missed
    expected[1, 3, 3] = 1  # frame b
    expected[1, 1, 1] = 1  # frame c: obs at exactly 10.0 m (half-open bins)
    expected[2, 3, 3] = 2  # frames a, b
    expected[2, 2, 0] = 1  # frame c: two peds, one seen as obs
    assert dc.prop_cm.tolist() == expected.tolist()
    pooled = np.zeros((4, 4), dtype=int)
    pooled[0, 2] = 1  # a
    pooled[3, 3] = 1  # b
    pooled[2, 2] = 1  # c
    assert dc.prop_cm_pooled.tolist() == pooled.tolist()


def test_report_counts_dropped_and_ignored() -> None:
    r = confusion_from_frames(hand_scene(), CFG).report
    assert r["frames"] == 3
    assert r["ground_truth_binned"] == 6
    assert r["ground_truth_beyond_range"] == 1
    assert r["ground_truth_below_range"] == 0
    assert r["ground_truth_unmapped"] == {"tree": 1}
    assert r["detections_unmapped"] == {"traffic light": 1}
    assert r["detections"] == 8
    assert r["detections_matched"] == 6
    assert r["detections_matched_out_of_range"] == 1
    assert r["detections_unannotated"] == 2


def test_class_aware_matching_turns_confusions_into_misses() -> None:
    cfg = ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10, 20, 30], class_aware=True)
    dc = confusion_from_frames(hand_scene(), cfg)
    assert dc.class_cm[0].tolist() == [[1, 0, 0], [0, 0, 0], [0, 1, 2]]
    assert dc.class_cm[2].tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 2]]


def test_crowded_frame_uses_optimal_not_greedy_matching() -> None:
    # x overlaps a best (0.9) but the optimum pairs x-b (0.636) and y-a (0.643).
    frame = Frame(
        0,
        detections=(det(0, 9, "obs"), det(-4, 9, "ped")),
        ground_truth=(gt(0, 10, "ped", 5), gt(2, 11, "obs", 5)),
    )
    acc = ConfusionAccumulator(ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10]))
    dc = acc.add_frames([frame]).result()
    assert dc.class_cm[0].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0]]


def test_exact_iou_tie_agrees_with_match_boxes() -> None:
    # Two identical detections of different classes on one object: the optimum is not unique.
    frame = Frame(0, detections=(det(0, 10, "obs"), det(0, 10, "ped")), ground_truth=(gt(1, 10, "ped", 5),))
    m = match_boxes(frame.detection_boxes(), frame.ground_truth_boxes(), 0.5)
    winner = frame.detections[int(m.det_indices[0])].class_id
    dc = confusion_from_frames([frame], ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10]))
    assert dc.class_cm[0, ("ped", "obs").index(winner), 0] == 1
    assert dc.report["hungarian_fallback_frames"] == 1


def test_class_map_patterns_and_first_match_wins() -> None:
    frame = Frame(
        0,
        detections=(det(0, 10, "person"),),
        ground_truth=(gt(0, 10, "human.pedestrian.adult", 5), gt(20, 30, "vehicle.car", 5)),
    )
    cfg = ConfusionConfig(bin_edges=[0, 10])  # default nuScenes/COCO map
    dc = confusion_from_frames([frame], cfg)
    assert dc.class_cm[0].tolist() == [[1, 0, 0], [0, 0, 0], [0, 1, 0]]


def test_merge_equals_single_pass() -> None:
    frames = hand_scene()
    one = ConfusionAccumulator(CFG).add_frames(frames)
    left = ConfusionAccumulator(CFG).add_frames(frames[:1])
    right = ConfusionAccumulator(CFG).add_frames(frames[1:])
    merged = left.merge(right)
    assert np.array_equal(merged.class_cm, one.class_cm)
    assert np.array_equal(merged.prop_cm_pooled, one.prop_cm_pooled)
    assert merged.report() == one.report()


# --- independent per-frame reference (Algorithms 1-2 written directly) -------------------------

CLASSES = ("ped", "obs")


def reference_counts(
    frames: list[Frame],
    edges: list[float],
    thr: float,
    class_aware: bool,
    classes: tuple[str, ...] = CLASSES,
    prop_order: tuple[tuple[str, ...], ...] = (("ped",), ("obs",), ("obs", "ped"), ()),
):
    k = len(edges) - 1
    idx = {frozenset(s): i for i, s in enumerate(prop_order)}
    names = (*classes, "empty")
    cls = np.zeros((k, len(names), len(names)), dtype=int)
    prop = np.zeros((k, len(prop_order), len(prop_order)), dtype=int)
    for f in frames:
        m = match_boxes(
            f.detection_boxes(),
            f.ground_truth_boxes(),
            thr,
            [d.class_id for d in f.detections],
            [g.class_id for g in f.ground_truth],
            class_aware,
        )
        det_of = {int(g): int(d) for d, g in zip(m.det_indices, m.gt_indices, strict=True)}
        for b in range(k):
            true_set, pred_set = set(), set()
            for gi, g in enumerate(f.ground_truth):
                if not edges[b] <= g.distance < edges[b + 1]:
                    continue
                p = f.detections[det_of[gi]].class_id if gi in det_of else "empty"
                cls[b, names.index(p), names.index(g.class_id)] += 1
                true_set.add(g.class_id)
                if p != "empty":
                    pred_set.add(p)
            if not true_set:
                cls[b, -1, -1] += 1
            prop[b, idx[frozenset(pred_set)], idx[frozenset(true_set)]] += 1
    return cls, prop


def random_frames(rng: np.random.Generator, n: int, max_dist: float, classes: tuple[str, ...] = CLASSES) -> list[Frame]:
    """Clustered boxes so that many frames have several admissible pairs per box."""
    frames = []
    for i in range(n):
        centres = rng.uniform(0, 100, size=(int(rng.integers(1, 4)), 2))
        gts, dets = [], []
        for _ in range(int(rng.integers(0, 7))):
            cx, cy = centres[rng.integers(len(centres))] + rng.normal(0, 3, 2)
            w, h = rng.uniform(5, 20, 2)
            box = Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            gts.append(GroundTruthObject(box, str(rng.choice(classes)), float(rng.uniform(0, max_dist))))
        for _ in range(int(rng.integers(0, 7))):
            cx, cy = centres[rng.integers(len(centres))] + rng.normal(0, 3, 2)
            w, h = rng.uniform(5, 20, 2)
            box = Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            dets.append(Detection(box, str(rng.choice(classes)), 0.5))
        frames.append(Frame(i, tuple(dets), tuple(gts)))
    return frames


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    thr=st.sampled_from([0.1, 0.3, 0.5, 0.7]),
    class_aware=st.booleans(),
    chunk=st.integers(1, 40),
)
def test_vectorised_path_equals_per_frame_hungarian(seed: int, thr: float, class_aware: bool, chunk: int) -> None:
    rng = np.random.default_rng(seed)
    frames = random_frames(rng, 40, 45.0)
    edges = [0.0, 10.0, 20.0, 30.0, 40.0]
    cfg = ConfusionConfig(
        classes=PED_OBS, bin_edges=edges, iou_threshold=thr, class_aware=class_aware, chunk_frames=chunk
    )
    dc = confusion_from_frames(frames, cfg)
    cls, prop = reference_counts(frames, edges, thr, class_aware)
    assert dc.class_cm.tolist() == cls.tolist()
    assert dc.prop_cm.tolist() == prop.tolist()
    # Pooled = the same algorithm with one bin spanning all edges.
    cls1, prop1 = reference_counts(frames, [0.0, 40.0], thr, class_aware)
    assert dc.class_cm_pooled.tolist() == cls1[0].tolist()
    assert dc.prop_cm_pooled.tolist() == prop1[0].tolist()


def test_random_data_exercises_the_fallback_and_simple_paths() -> None:
    frames = random_frames(np.random.default_rng(7), 300, 45.0)
    r = confusion_from_frames(frames, ConfusionConfig(classes=PED_OBS, bin_edges=[0, 20, 40], iou_threshold=0.3)).report
    assert 0 < r["hungarian_fallback_frames"] < r["frames"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_invariants(seed: int) -> None:
    rng = np.random.default_rng(seed)
    frames = random_frames(rng, 30, 50.0)
    edges = [0.0, 15.0, 30.0, 45.0]
    dc = confusion_from_frames(frames, ConfusionConfig(classes=PED_OBS, bin_edges=edges))
    for b in range(3):
        for c, name in enumerate(CLASSES):
            n = sum(
                1
                for f in frames
                for g in f.ground_truth
                if g.class_id == name and edges[b] <= g.distance < edges[b + 1]
            )
            assert dc.class_cm[b, :, c].sum() == n
        # (empty, empty) is the same cell count in both matrix types.
        assert dc.class_cm[b, 2, 2] == dc.prop_cm[b, 3, 3]
        # Samples with class c in the true set never exceed the objects of class c.
        totals = dc.prop_cm[b].sum(axis=0)
        assert totals[0] + totals[2] <= dc.class_cm[b, :, 0].sum()
        assert totals[1] + totals[2] <= dc.class_cm[b, :, 1].sum()
        # One proposition sample per (frame, bin).
        assert dc.prop_cm[b].sum() == len(frames)
    assert dc.prop_cm_pooled.sum() == len(frames)
    dropped = sum(1 for f in frames for g in f.ground_truth if g.distance >= 45.0)
    assert dc.report["ground_truth_beyond_range"] == dropped


def test_config_rejects_bad_values() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="strictly increasing"):
        ConfusionConfig(bin_edges=[0, 10, 10])
    with pytest.raises(ValidationError, match="empty_label"):
        ConfusionConfig(classes={"empty": ["x"]})
    with pytest.raises(ValidationError, match="commas"):
        ConfusionConfig(classes={"a,b": ["x"]})
    with pytest.raises(ValidationError):
        ConfusionConfig(classes={f"c{i}": ["x"] for i in range(9)})


def test_class_metrics_of_hand_scene() -> None:
    from perception_safety.evaluation.confusion.metrics import class_metrics

    rows = {(r.bin, r.label): r for r in class_metrics(confusion_from_frames(hand_scene(), CFG))}
    # Bin 0: ped 1/1 found; obs 1 object, predicted ped.
    ped0, obs0 = rows[("0", "ped")], rows[("0", "obs")]
    assert (ped0.ground_truth, ped0.true_positives, ped0.predicted) == (1, 1, 2)
    assert ped0.recall == 1.0 and ped0.precision_matched_only == 0.5 and ped0.false_negative_rate == 0.0
    # Without a distance for unmatched detections (no ground_camera) precision exists pooled only.
    assert ped0.precision is None and ped0.unmatched is None
    assert (obs0.ground_truth, obs0.true_positives, obs0.confused, obs0.missed) == (1, 0, 1, 0)
    assert obs0.recall == 0.0 and obs0.precision_matched_only is None and obs0.false_negative_rate == 1.0
    # Bin 1: obs one missed, one found.
    obs1 = rows[("1", "obs")]
    assert (obs1.ground_truth, obs1.missed, obs1.recall, obs1.miss_rate) == (2, 1, 0.5, 0.5)
    assert rows[("1", "ped")].recall is None
    # Pooled ped: 3 objects, 2 found, 1 seen as obs.
    pp = rows[("pooled", "ped")]
    assert (pp.ground_truth, pp.true_positives, pp.confused, pp.predicted) == (3, 2, 1, 3)
    assert pp.precision_matched_only == pytest.approx(2 / 3)
    # Frame b's ped detection matches nothing: a false positive in the precision.
    assert pp.unmatched == 1 and pp.precision == pytest.approx(2 / 4)


def test_objects_below_the_first_edge_are_dropped_and_counted() -> None:
    frame = Frame(0, detections=(det(0, 10, "ped"),), ground_truth=(gt(0, 10, "ped", 3.0), gt(20, 30, "obs", 7.5)))
    dc = confusion_from_frames([frame], ConfusionConfig(classes=PED_OBS, bin_edges=[5, 10]))
    assert dc.class_cm[0].tolist() == [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert dc.report["ground_truth_below_range"] == 1
    # The dropped object still took part in matching: its detection is not a ghost.
    assert dc.report["detections_matched_out_of_range"] == 1 and dc.report["detections_unannotated"] == 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), class_aware=st.booleans())
def test_three_classes_equal_per_frame_reference(seed: int, class_aware: bool) -> None:
    classes = ("a", "b", "c")
    order = (("a",), ("b",), ("c",), ("a", "b"), ("a", "c"), ("b", "c"), ("a", "b", "c"), ())
    frames = random_frames(np.random.default_rng(seed), 40, 30.0, classes)
    cfg = ConfusionConfig(classes={c: [c] for c in classes}, bin_edges=[0, 10, 20, 30], class_aware=class_aware)
    dc = confusion_from_frames(frames, cfg)
    assert dc.prop_labels == ("a", "b", "c", "a,b", "a,c", "b,c", "a,b,c", "empty")
    cls, prop = reference_counts(frames, [0, 10, 20, 30], 0.5, class_aware, classes, order)
    assert dc.class_cm.tolist() == cls.tolist()
    assert dc.prop_cm.tolist() == prop.tolist()
