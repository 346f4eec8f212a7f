"""Ignore regions (KITTI DontCare, COCO iscrowd) and ground truth that cannot be right (issue 23 item 5)."""

from __future__ import annotations

import json

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.ground_truth_screen import ScreenCounts, screen_frame, screen_warnings

PED = GroundTruthObject.at_position(Box(100, 100, 140, 200), "pedestrian", (10.0, 1.0, 0.0))
DONTCARE = GroundTruthObject(Box(300, 100, 400, 160), "DontCare", 0.0, None, "", ignore=True)


def test_detections_in_an_ignore_region_count_neither_way():
    inside = Detection(Box(310, 110, 350, 150), "car", 0.9)  # all of it inside the region
    half = Detection(Box(370, 100, 430, 160), "car", 0.8)  # 30 of 60 px wide inside: 0.5 of its area
    outside = Detection(Box(500, 100, 540, 150), "car", 0.7)
    hit = Detection(Box(101, 101, 141, 201), "pedestrian", 0.9)  # matches the pedestrian (IoU 0.93)
    frame = Frame(0, (inside, half, outside, hit), (PED, DONTCARE))
    screened, counts = screen_frame(frame, 0.5)
    assert screened.ground_truth == (PED,)
    assert screened.detections == (outside, hit)
    assert counts == ScreenCounts(ignore_regions=1, ignored_detections=2)


def test_a_detection_of_a_real_object_partly_in_an_ignore_region_is_kept():
    ped = GroundTruthObject.at_position(Box(290, 100, 330, 200), "pedestrian", (9.0, 0.0, 0.0))
    det = Detection(Box(292, 102, 332, 202), "pedestrian", 0.9)  # 38 of 40 px inside the region, but the object
    screened, counts = screen_frame(Frame(0, (det,), (ped, DONTCARE)), 0.5)
    assert screened.detections == (det,) and screened.ground_truth == (ped,)
    assert counts.ignored_detections == 0


def test_impossible_ground_truth_is_excluded_and_counted():
    behind = GroundTruthObject.at_position(Box(10, 10, 50, 90), "pedestrian", (-3.0, 0.5, 0.0))
    zero = GroundTruthObject(Box(60, 60, 60, 90), "car", 12.0)
    outside = GroundTruthObject(Box(700, 10, 760, 90), "car", 30.0)
    det_behind = Detection(Box(11, 11, 51, 91), "pedestrian", 0.9)
    frame = Frame(0, (det_behind,), (PED, behind, zero, outside), camera=Intrinsics.from_fov(640, 480, 90.0))
    screened, counts = screen_frame(frame, 0.5)
    assert screened.ground_truth == (PED,) and screened.detections == ()
    assert counts == ScreenCounts(behind_camera=1, zero_area=1, outside_image=1, detections_of_impossible=1)
    # without a known image size nothing is judged outside it
    _, unknown = screen_frame(Frame(0, (), (outside,)), 0.5)
    assert unknown == ScreenCounts()
    (text,) = screen_warnings(counts)
    assert text == ("ground truth that cannot be right, excluded from every metric: 1 behind the camera, 1 of zero "
                    "area, 1 entirely outside the image; 1 detection(s) matching them excluded too")


def test_ignore_flag_survives_bags_and_json_lines(tmp_path):
    from perception_safety.io.bag import BagTopics, read_frames, write_frames
    from perception_safety.io.dataset import read_jsonl_frames, write_jsonl_frames

    frame = Frame(5, (Detection(Box(310, 110, 350, 150), "car", 0.9),), (PED, DONTCARE))
    write_frames(tmp_path / "bag", [frame], topics=BagTopics(image=""))
    (back,) = read_frames(tmp_path / "bag", BagTopics(image=""))
    assert [g.ignore for g in back.ground_truth] == [False, True]
    write_jsonl_frames(tmp_path / "d.jsonl", [frame])
    assert json.loads((tmp_path / "d.jsonl").read_text())["ground_truth"][1]["ignore"] is True
    (again,) = read_jsonl_frames(tmp_path / "d.jsonl")
    assert [g.ignore for g in again.ground_truth] == [False, True]


def test_confusion_command_leaves_ignored_detections_out_and_says_so(tmp_path, capsys):
    from perception_safety.cli import main
    from perception_safety.io.dataset import write_jsonl_frames

    inside = Detection(Box(310, 110, 350, 150), "car", 0.9)
    hit = Detection(Box(101, 101, 141, 201), "pedestrian", 0.9)
    kitti = GroundTruthObject.at_position(Box(600, 100, 640, 200), "Pedestrian", (12.0, -2.0, 0.0))
    frames = [Frame(k, (inside, hit), (PED, DONTCARE, kitti)) for k in range(3)]
    write_jsonl_frames(tmp_path / "d.jsonl", frames)
    assert main(["confusion", str(tmp_path / "d.jsonl"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "3 ignore region(s) (KITTI DontCare / COCO iscrowd) are not objects" in err
    assert "3 detection(s) inside them count neither as true nor as false positives" in err
    doc = json.loads((tmp_path / "o" / "confusion.json").read_text())
    assert any("ignore region" in w for w in doc["warnings"])
    # KITTI's Pedestrian is in the default class map now: no unmapped ground truth
    assert not any("map to no evaluation class" in w for w in doc["warnings"])


def test_screening_many_frames_is_screening_each_frame():
    """`screen_frames` passes only the frames with something to screen through `screen_frame`; the result must be
    that of screening every frame (random frames: ignore regions, zero-area, behind-camera and off-image objects,
    with an image, a CameraInfo or no known size)."""
    import numpy as np

    from perception_safety.evaluation.ground_truth_screen import screen_frames

    rng = np.random.default_rng(4)
    frames = []
    for i in range(400):
        gts, dets = [], []
        for _ in range(rng.integers(0, 4)):
            x, y = rng.uniform(-150, 700), rng.uniform(-150, 500)
            w, h = rng.choice([0.0, 20.0, 60.0]), rng.choice([0.0, 30.0, 80.0])
            pos = None if rng.random() < 0.5 else (float(rng.choice([-3.0, 0.0, 12.0])), 0.0, 0.0)
            box = Box(x, y, x + w, y + h)
            gts.append(GroundTruthObject(box, "car", 10.0, position=pos, ignore=bool(rng.random() < 0.1)))
            if rng.random() < 0.7:
                dets.append(Detection(Box(x + 1, y, x + w + 2, y + h + 1), "car", 0.8))
        kind = rng.integers(0, 3)
        image = np.zeros((480, 640, 3), np.uint8) if kind == 0 else None
        camera = Intrinsics.from_fov(640, 480, 90.0) if kind == 1 else None
        frames.append(Frame(i, tuple(dets), tuple(gts), image=image, camera=camera))
    got, counts = screen_frames(frames, 0.5)
    want = [screen_frame(f, 0.5) for f in frames]
    assert got == [w[0] for w in want]
    assert counts.to_dict() == {k: sum(w[1].to_dict()[k] for w in want) for k in counts.to_dict()}
    assert sum(g != f for g, f in zip(got, frames, strict=True)) > 50 and min(counts.to_dict().values()) > 0
