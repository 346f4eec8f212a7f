"""Frame references behind the counts: the right cell, bounded, most informative first, and mergeable."""

from __future__ import annotations

import numpy as np

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.evidence import (
    EvidenceCollector,
    FrameRef,
    collect_confusion,
    collect_stops,
    merge_cells,
)
from perception_safety.monitors.config import MonitorsConfig

CFG = ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}, bin_edges=[0.0, 10.0, 20.0, 30.0])


def _gt(x: float, dist: float, cls: str = "pedestrian") -> GroundTruthObject:
    return GroundTruthObject(Box(x, 100, x + 20, 160), cls, dist, track_id=f"{cls}{x:g}")


def _counted_like_the_matrices(frames: list[Frame], cfg: ConfusionConfig) -> EvidenceCollector:
    """Evidence of ``frames`` (5 references per cell) whose counts equal every class-labeled cell of the matrices
    of the same frames (the (empty, empty) cell counts frames, not objects)."""
    col = EvidenceCollector(per_cell=5)
    collect_confusion(col, frames, cfg)
    dc = confusion_from_frames(frames, cfg)
    names = dc.class_labels
    for k, (lo, hi) in enumerate(dc.bin_edges):
        for p, pred in enumerate(names):
            for t, true in enumerate(names[:-1]):
                assert col.counts.get(f"cm:{pred}:{true}@{lo:g}-{hi:g}", 0) == dc.class_cm[k, p, t]
    return col


def test_each_object_lands_in_its_cell_and_errors_are_ranked_nearest_first():
    frames = [
        Frame(0, (), (_gt(0, 15.0), _gt(50, 4.0))),  # two missed pedestrians: 15 m and 4 m
        Frame(1, (Detection(Box(0, 100, 20, 160), "pedestrian", 0.9),), (_gt(0, 12.0),)),  # found at 12 m
        Frame(2, (Detection(Box(300, 10, 320, 40), "pedestrian", 0.7),), (_gt(0, 7.0),)),  # missed + a false one
        Frame(3, (Detection(Box(0, 100, 20, 160), "car", 0.8),), (_gt(0, 25.0),)),  # confused at 25 m
    ]
    col = EvidenceCollector(per_cell=20)
    collect_confusion(col, frames, CFG)
    assert col.counts == {"cm:empty:ped@0-10": 2, "cm:empty:ped@10-20": 1, "cm:ped:ped@10-20": 1,
                          "cm:obs:ped@20-30": 1, "false:ped": 1}
    assert [r.distance_m for r in col.refs("cm:empty:ped@0-10")] == [4.0, 7.0]
    assert [r.stamp_ns for r in col.refs("cm:empty:ped@0-10")] == [0, 2]
    (ghost,) = col.refs("false:ped")
    assert (ghost.stamp_ns, ghost.box, ghost.kind) == (2, (300.0, 10.0, 320.0, 40.0), "false_detection")


def test_counts_agree_with_the_confusion_matrices_of_the_same_frames():
    rng = np.random.default_rng(3)
    frames = []
    for i in range(60):
        gts = tuple(_gt(float(x), float(rng.uniform(0, 35)), str(rng.choice(["pedestrian", "car"])))
                    for x in rng.choice(np.arange(0, 600, 40), 3, replace=False))
        dets = tuple(Detection(Box(g.box.x_min + rng.normal(0, 3), 100, g.box.x_max, 160),
                               "pedestrian" if rng.uniform() < 0.6 else "car", 0.9)
                     for g in gts if rng.uniform() < 0.7)
        frames.append(Frame(i, dets, gts))
    col = _counted_like_the_matrices(frames, CFG)
    assert all(len(col.refs(key)) == min(5, n) for key, n in col.counts.items())


def test_the_bound_keeps_the_most_informative_and_merge_keeps_it_over_bags():
    col = EvidenceCollector(per_cell=3)
    for stamp, prio in ((5, 9.0), (1, 2.0), (7, 1.0), (3, 5.0), (9, 0.5)):
        col.add("c", FrameRef(stamp, "missed", priority=prio))
    assert [r.priority for r in col.refs("c")] == [0.5, 1.0, 2.0] and col.counts["c"] == 5
    a = {"cells": {"c": {"count": 5, "refs": [dict(r.to_json(), bag="a") for r in col.refs("c")]}}}
    b = {"cells": {"c": {"count": 2, "refs": [dict(FrameRef(2, "missed", priority=0.7).to_json(), bag="b")]}}}
    merged = merge_cells([a, b], per_cell=3)
    assert merged["c"]["count"] == 7
    assert [(r["bag"], r["priority"]) for r in merged["c"]["refs"]] == [("a", 0.5), ("b", 0.7), ("a", 1.0)]


def test_false_and_missed_stops_compare_the_rule_on_detections_with_the_rule_on_truth():
    region = MonitorsConfig.model_validate({"stop_region": {
        "region": {"units": "px", "image_size": [640, 360], "left": 100, "top": 100, "width": 100, "height": 100},
        "watched_classes": ["pedestrian"]}})
    image = np.zeros((360, 640, 3), np.uint8)
    inside = Box(120, 120, 150, 190)
    frames = [
        Frame(0, (Detection(inside, "pedestrian", 0.8),), (), image=image),  # a ghost in the region: false stop
        Frame(1, (), (GroundTruthObject(inside, "pedestrian", 6.0),), image=image),  # nobody seen: missed stop
        Frame(2, (Detection(inside, "pedestrian", 0.8),), (GroundTruthObject(inside, "pedestrian", 6.0),),
              image=image),
        Frame(3, (Detection(Box(0, 0, 20, 20), "pedestrian", 0.8),), (), image=image),  # outside: nothing
    ]
    col = EvidenceCollector()
    collect_stops(col, frames, region)
    assert col.counts == {"false_stop": 1, "missed_stop": 1}
    assert col.refs("false_stop")[0].stamp_ns == 0 and col.refs("missed_stop")[0].distance_m == 6.0


def test_adding_many_at_once_keeps_what_adding_one_by_one_keeps():
    """`add_ranked` builds only the references that can survive; the kept set, its order and the counts must be
    those of `add` called for every occurrence (ties in priority and stamp broken by arrival, cells pre-filled)."""
    rng = np.random.default_rng(3)
    cells = ["a", "b", "c"]
    for per_cell in (0, 1, 3, 50):
        one, many = EvidenceCollector(per_cell=per_cell), EvidenceCollector(per_cell=per_cell)
        for col in (one, many):  # earlier occurrences in cell a
            for k in range(4):
                col.add("a", FrameRef(k, "missed", priority=float(k % 2)))
        n = 200
        which = rng.integers(0, 3, n)
        priority = rng.integers(0, 4, n).astype(float)  # many ties
        stamp = rng.integers(0, 5, n)
        refs = [FrameRef(int(stamp[i]), "missed", detail=str(i), priority=float(priority[i])) for i in range(n)]
        for i in range(n):
            one.add(cells[which[i]], refs[i])
        built = []
        many.add_ranked(cells, which, priority, stamp, lambda i, b=built, r=refs: b.append(i) or r[i])
        assert many.to_json() == one.to_json()
        assert len(built) <= 3 * per_cell



def test_centre_distance_references_sit_in_the_cells_the_counts_put_them():
    """3D object lists (boxes are bird's-eye-view footprints in metres) matched by centre distance: a detection
    whose footprint is 1.5 m off a pedestrian's (IoU 0) is a found object, in the evidence as in the counts."""
    cfg = ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}, bin_edges=[0.0, 10.0, 20.0, 30.0],
                          matching="centre_distance", centre_distance_m=2.0)
    rng = np.random.default_rng(5)
    frames = []
    for i in range(40):
        gts, dets = [], []
        for k in range(3):
            x, y = float(rng.uniform(2, 28)), 6.0 * k - 6.0
            cls = str(rng.choice(["pedestrian", "car"]))
            gts.append(GroundTruthObject(Box(x - 0.3, y - 0.3, x + 0.3, y + 0.3), cls, float(np.hypot(x, y)),
                                         track_id=f"t{k}"))
            if rng.uniform() < 0.8:  # 1.5 m off (found by centre distance, IoU 0) or 3.5 m off (missed)
                dx = float(rng.choice([1.5, 3.5]))
                dets.append(Detection(Box(x + dx - 0.3, y - 0.3, x + dx + 0.3, y + 0.3),
                                      cls if rng.uniform() < 0.7 else "car", 0.9))
        frames.append(Frame(i, tuple(dets), tuple(gts)))
    dc = confusion_from_frames(frames, cfg)
    _counted_like_the_matrices(frames, cfg)
    assert dc.class_cm[:, :-1, :].sum() > 20  # objects found that no box overlap (IoU 0) would find
