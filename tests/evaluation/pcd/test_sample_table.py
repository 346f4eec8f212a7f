"""The all-frames-at-once PCD extraction against the per-frame rule it replaced (issue 27): identical samples, order,
values, dtypes, group ids, inputs and frame indices on random scenes full of edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject, match_frame
from perception_safety.core.iou import iou_matrix
from perception_safety.evaluation.pcd.sample_table import SampleError, input_kind, sample_table
from perception_safety.evaluation.pcd.samples import samples_from_frames
from perception_safety.pipeline.breakdowns import FrameSamples
from perception_safety.pipeline.evaluate_config import EvaluateConfig, PCDTarget

CLASSES = ("car", "pedestrian", "bike")


def _reference(frames, class_id, track_id, iou_threshold, class_aware, source, input, unit):
    """The per-frame extraction as it was: one IoU matrix / Hungarian match per frame, Python lists of samples,
    plus each sample's frame and input. Returns the rows in extraction order and the input kind."""
    rows = []
    for i, frame in enumerate(frames):
        if not frame.ground_truth:
            continue
        raw = input == "raw" or (input == "auto" and frame.candidates is not None)
        if raw and frame.candidates is None:
            raise SampleError("samples.input is raw but no sub-threshold candidates were recorded")
        n_gt = len(frame.ground_truth)
        if raw:
            boxes = list(frame.detections) + list(frame.candidates)
            y_gt = np.zeros(n_gt)
            if boxes:
                ious = iou_matrix(np.array([b.box.as_tuple() for b in boxes]), frame.ground_truth_boxes())
                for b, box in enumerate(boxes):
                    best, best_iou = -1, -1.0
                    for g, obj in enumerate(frame.ground_truth):
                        iou = ious[b, g]
                        ok = iou > 0.0 and iou >= iou_threshold and (not class_aware or box.class_id == obj.class_id)
                        if ok and iou > best_iou:
                            best, best_iou = g, iou
                    if best >= 0:
                        y_gt[best] = max(y_gt[best], ious[b, best] * box.score)
        else:
            m = match_frame(frame, iou_threshold=iou_threshold, class_aware=class_aware)
            y_gt = np.zeros(n_gt)
            for g, d, iou in zip(m.gt_indices, m.det_indices, m.ious, strict=True):
                y_gt[g] = iou * frame.detections[d].score
        for g, obj in enumerate(frame.ground_truth):
            if (class_id is None or obj.class_id == class_id) and (track_id is None or obj.track_id == track_id):
                group = f"{source}|{obj.track_id}" if unit == "track" and obj.track_id else source
                rows.append((float(obj.distance), float(y_gt[g]), group, i, raw))
    used = {r[4] for r in rows}
    kind = (
        "mixed"
        if len(used) == 2
        else (("raw" if used.pop() else "thresholded") if used else ("raw" if input == "raw" else "thresholded"))
    )
    return rows, kind


def _box(rng) -> Box:
    x, y = rng.integers(0, 6, 2) * 4.0
    return Box(x, y, x + rng.integers(1, 4) * 4.0, y + rng.integers(1, 4) * 4.0)


def _scene(rng, n_frames: int, with_candidates: float) -> list[Frame]:
    frames = []
    for i in range(n_frames):
        gts = []
        for _ in range(rng.choice([0, 0, 1, 2, 3, 5])):
            box = gts[-1].box if gts and rng.random() < 0.2 else _box(rng)  # duplicate boxes: ties
            gts.append(
                GroundTruthObject(
                    box,
                    str(rng.choice(CLASSES)),
                    float(rng.integers(0, 8) * 2.5),
                    track_id=str(rng.choice(["", "1", "2", "7"])),
                    ignore=rng.random() < 0.1,
                )
            )
        dets = [
            Detection(_box(rng), str(rng.choice(CLASSES)), float(rng.choice([0.0, 0.25, 0.5, 0.8, 1.0])))
            for _ in range(rng.choice([0, 0, 1, 2, 4]))
        ]
        cands = None
        if rng.random() < with_candidates:
            cands = tuple(
                Detection(_box(rng), str(rng.choice(CLASSES)), float(rng.choice([0.0, 0.1, 0.3])))
                for _ in range(rng.choice([0, 1, 3]))
            )
        frames.append(Frame(stamp_ns=i, detections=tuple(dets), ground_truth=tuple(gts), candidates=cands))
    return frames


CASES = [
    # (input, share of frames with candidates, iou threshold, class-aware, class filter, track filter, unit)
    ("auto", 0.5, 0.0, False, None, None, "track"),
    ("auto", 0.5, 0.3, True, "car", None, "track"),
    ("auto", 1.0, 0.5, True, "pedestrian", "1", "episode"),
    ("auto", 0.0, 0.0, True, None, "2", "track"),
    ("raw", 1.0, 0.0, False, "bike", None, "track"),
    ("raw", 1.0, 0.25, True, None, None, "episode"),
    ("thresholded", 0.5, 0.0, False, None, None, "track"),
    ("thresholded", 0.0, 0.5, True, "car", "7", "track"),
    ("thresholded", 0.0, 1.0, False, None, None, "track"),
    ("auto", 0.5, 0.1, False, "nothing", None, "track"),  # a target no frame holds: no sample
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_same_samples_as_the_per_frame_rule(case: int) -> None:
    input, share, thr, aware, cls, track, unit = CASES[case]
    for seed in range(6):
        frames = _scene(np.random.default_rng(100 * case + seed), 60, share)
        rows, kind = _reference(frames, cls, track, thr, aware, "bag", input, unit)
        tab = sample_table(frames, cls, track, thr, aware, "bag", input, unit)
        assert tab.input == kind
        assert tab.x.dtype == np.float64 and tab.y.dtype == np.float64 and tab.missed.dtype == bool
        assert tab.group.dtype == object and tab.frame.dtype == np.int64 and tab.raw.dtype == bool
        assert tab.x.tolist() == [r[0] for r in rows]
        assert tab.y.tolist() == [r[1] for r in rows]  # exactly, not approximately
        assert tab.missed.tolist() == [r[1] == 0.0 for r in rows]
        assert tab.group.tolist() == [r[2] for r in rows]
        assert tab.frame.tolist() == [r[3] for r in rows]
        assert tab.raw.tolist() == [r[4] for r in rows]
        s = samples_from_frames(frames, cls, track, thr, aware, "bag", input, unit)
        order = np.argsort(np.asarray([r[0] for r in rows], dtype=float), kind="stable")
        assert s.x.tolist() == [rows[i][0] for i in order] and s.y.tolist() == [rows[i][1] for i in order]
        assert s.group.tolist() == [rows[i][2] for i in order] and s.input == kind and s.source == "bag"


def test_scenes_exercise_the_edge_cases() -> None:
    """The random scenes hold what the comparison must cover: hits, misses, ties and tangled Hungarian frames."""
    frames = _scene(np.random.default_rng(0), 300, 0.5)
    rows, _ = _reference(frames, None, None, 0.0, False, "bag", "thresholded", "track")
    ys = np.array([r[1] for r in rows])
    assert (ys > 0).sum() > 20 and (ys == 0).sum() > 20
    tangled = 0
    for f in frames:
        if f.detections and f.ground_truth:
            ious = iou_matrix(f.detection_boxes(), f.ground_truth_boxes())
            tangled += bool(((ious > 0).sum(0) > 1).any() or ((ious > 0).sum(1) > 1).any())
    assert tangled > 10
    assert sum(len({g.box for g in f.ground_truth}) < len(f.ground_truth) for f in frames) > 5  # tied targets


def test_empty_inputs() -> None:
    for frames in ([], [Frame(stamp_ns=0)], [Frame(stamp_ns=0, detections=(Detection(Box(0, 0, 1, 1), "car"),))]):
        for input in ("auto", "raw", "thresholded"):
            tab = sample_table(frames, input=input)
            assert tab.x.size == 0 and tab.input == ("raw" if input == "raw" else "thresholded")
            assert tab.x.dtype == np.float64 and tab.group.dtype == object


def test_raw_without_candidates_and_bad_threshold_are_still_errors() -> None:
    f = Frame(stamp_ns=5, ground_truth=(GroundTruthObject(Box(0, 0, 4, 4), "car", 3.0),))
    with pytest.raises(SampleError, match=r"frame 5: samples\.input is raw but no sub-threshold candidates"):
        sample_table([f], input="raw", source="b")
    with pytest.raises(ValueError, match="iou_threshold must lie in"):
        sample_table([f], iou_threshold=1.5, input="thresholded")


def test_frame_samples_follow_their_frames() -> None:
    """`FrameSamples.of` (the evaluate map's path): the sorted samples with the frame and input of each."""
    frames = _scene(np.random.default_rng(7), 200, 0.5)
    cfg = EvaluateConfig.model_validate({"evaluate": {"pcd_targets": [{"name": "c", "class_id": "car"}]}})
    t = PCDTarget(name="c", class_id="car")
    fs = FrameSamples.of(frames, t, cfg, "bag")
    rows, kind = _reference(frames, "car", None, t.iou_threshold, t.class_aware, "bag", "auto", "track")
    order = np.argsort(np.asarray([r[0] for r in rows], dtype=float), kind="stable")
    assert fs.frame.tolist() == [rows[i][3] for i in order] and fs.raw.tolist() == [rows[i][4] for i in order]
    assert fs.samples.y.tolist() == [rows[i][1] for i in order] and fs.samples.input == kind


def _only_band(frame: Frame, edges, k: int) -> Frame:
    """The frame with only its ground truth, detections and candidates whose box height lies in band ``k``."""

    def band(box: Box) -> int:
        return sum(box.y_max - box.y_min >= e for e in edges) - 1

    keep = lambda objs: tuple(o for o in objs if band(o.box) == k)  # noqa: E731
    cands = None if frame.candidates is None else keep(frame.candidates)
    return Frame(frame.stamp_ns, keep(frame.detections), keep(frame.ground_truth), candidates=cands)


@pytest.mark.parametrize("edges", [(0.0, 6.0, 10.0), (5.0, 9.0), (8.0,)])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_size_bands_are_the_samples_of_each_bands_boxes_alone(case: int, edges) -> None:
    """`sample_table(..., size_edges)` pairs boxes and targets only within a size band: each band's samples are
    the per-frame rule's on the frames restricted to that band's boxes (heights 4, 8 and 12 px; band -1 below the
    first edge is in no band)."""
    input, share, thr, aware, cls, track, unit = CASES[case]
    seen = 0
    for seed in range(4):
        frames = _scene(np.random.default_rng(100 * case + seed), 60, share)
        tab = sample_table(frames, cls, track, thr, aware, "bag", input, unit, size_edges=edges)
        for k in range(-1 if edges[0] > 0 else 0, len(edges)):
            rows, kind = _reference([_only_band(f, edges, k) for f in frames], cls, track, thr, aware, "bag", input,
                                    unit)  # fmt: skip
            sel = tab.band == k
            assert tab.x[sel].tolist() == [r[0] for r in rows] and tab.y[sel].tolist() == [r[1] for r in rows]
            assert tab.group[sel].tolist() == [r[2] for r in rows] and tab.frame[sel].tolist() == [r[3] for r in rows]
            assert tab.raw[sel].tolist() == [r[4] for r in rows]
            assert input_kind(tab.raw[sel], input) == kind
            seen += sum(r[1] > 0 for r in rows)
    assert seen > 0 or cls == "nothing" or track is not None  # the bands hold detected samples


def test_frame_samples_of_size_bands_select_like_the_bands_frames() -> None:
    """`FrameSamples.of(..., size_edges)`: each band's JSON part is `pcd_parts` of the band-restricted frames."""
    from perception_safety.pipeline.breakdowns import pcd_parts

    frames = _scene(np.random.default_rng(3), 200, 0.5)
    cfg = EvaluateConfig.model_validate({"evaluate": {"pcd_targets": [{"name": "c", "class_id": "car"}]}})
    t = PCDTarget(name="c", class_id="car")
    edges = (0.0, 6.0, 10.0)
    fs = FrameSamples.of(frames, t, cfg, "bag", edges)
    for k in range(3):
        assert fs.selected(fs.band == k) == pcd_parts([_only_band(f, edges, k) for f in frames], cfg, "bag")["c"]


def test_frames_flattened_once_serve_every_target_and_band() -> None:
    from perception_safety.evaluation.pcd.sample_table import flatten_frames

    frames = _scene(np.random.default_rng(9), 120, 0.5)
    flat = flatten_frames(frames, "auto", "bag")
    for cls, edges in ((None, None), ("car", None), ("pedestrian", (0.0, 6.0, 10.0))):
        a = sample_table(flat, cls, None, 0.3, True, "bag", "auto", "track", edges)
        b = sample_table(frames, cls, None, 0.3, True, "bag", "auto", "track", edges)
        for name in ("x", "y", "missed", "group", "frame", "raw", "band"):
            assert (getattr(a, name) is None and getattr(b, name) is None) or \
                getattr(a, name).tolist() == getattr(b, name).tolist()
    with pytest.raises(ValueError, match="flattened for input 'auto'"):
        sample_table(flat, input="raw", source="bag")
