"""KITTI and COCO converters: hand-written files in, the JSON Lines records we expect out, bad input named."""

from __future__ import annotations

import json
import math

import pytest

from perception_safety.cli import main
from perception_safety.io.converters import ConversionError, ConversionReport
from perception_safety.io.converters.coco import convert_coco
from perception_safety.io.converters.kitti import convert_kitti
from perception_safety.io.dataset import read_jsonl_frames

# KITTI training/label_2/000000.txt-style lines (type trunc occl alpha x1 y1 x2 y2 h w l X Y Z ry)
LABEL = """Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01
Car 0.00 0 1.55 387.63 181.54 423.81 203.12 1.67 1.87 3.69 -16.53 2.39 58.49 1.57
DontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 -1 -1000 -1000 -1000 -10
"""
DETS = """Pedestrian 0.00 0 -0.20 710.00 145.00 808.00 305.00 1.89 0.48 1.20 1.84 1.47 8.41 0.01 0.93
Car 0.00 0 1.55 380.00 180.00 420.00 200.00 1.67 1.87 3.69 -16.53 2.39 58.49 1.57 0.41
"""


def test_kitti_labels_and_detections(tmp_path):
    (tmp_path / "labels").mkdir()
    (tmp_path / "dets").mkdir()
    (tmp_path / "labels" / "000000.txt").write_text(LABEL)
    (tmp_path / "labels" / "000001.txt").write_text("")
    (tmp_path / "dets" / "000000.txt").write_text(DETS)
    report = ConversionReport()
    frames = list(convert_kitti(tmp_path / "labels", tmp_path / "dets", report=report))
    assert [f.frame_id for f in frames] == ["000000", "000001"]
    ped, car, dontcare = frames[0].ground_truth
    assert (ped.class_id, car.class_id) == ("pedestrian", "car")
    # DontCare is kept as an ignore region (issue 23 item 5), not an object
    assert (dontcare.class_id, dontcare.ignore, dontcare.box.as_tuple()) == ("DontCare", True,
                                                                            (503.89, 169.71, 590.61, 190.13))
    assert not ped.ignore and not car.ignore
    assert ped.box.as_tuple() == (712.40, 143.00, 810.73, 307.92)
    assert ped.position == (8.41, -1.84, -1.47)  # camera (x right, y down, z fwd) -> ego (x fwd, y left, z up)
    assert ped.distance == pytest.approx(math.sqrt(1.84**2 + 1.47**2 + 8.41**2))
    assert [d.score for d in frames[0].detections] == [0.93, 0.41]
    assert report.skipped == {"frames without a detection file (no detections)": 1}
    assert report.ignore_regions == {"'DontCare' regions": 1}
    assert report.classes == {"Pedestrian": "pedestrian", "Car": "car"}


def test_kitti_bad_line_names_file_and_line(tmp_path):
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / "000007.txt").write_text(LABEL.splitlines()[0] + "\nCar 0 0 0 1 2 3\n")
    with pytest.raises(ConversionError, match=r"000007\.txt:2: expected at least 15 fields"):
        list(convert_kitti(tmp_path / "l"))
    (tmp_path / "l" / "000007.txt").write_text("Car 0 0 0 50 2 3 4 1 1 1 1 1 1 0\n")  # x_max < x_min
    with pytest.raises(ConversionError, match=r"000007\.txt:1: .*"):
        list(convert_kitti(tmp_path / "l"))


COCO = {
    "images": [{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "b.png"}],
    "categories": [{"id": 1, "name": "Person"}, {"id": 3, "name": "car"}],
    "annotations": [
        {"id": 10, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40], "distance": 12.5, "track_id": 4},
        {"id": 11, "image_id": 1, "category_id": 3, "bbox": [100, 100, 50, 20], "iscrowd": 1},
        {"id": 12, "image_id": 2, "category_id": 3, "bbox": [5, 5, 10, 10]},
    ],
}


def test_coco_ground_truth_results_and_distances(tmp_path):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(COCO))
    res = tmp_path / "res.json"
    res.write_text(json.dumps([{"image_id": 2, "category_id": 3, "bbox": [6, 6, 10, 10], "score": 0.8}]))
    with pytest.raises(ConversionError, match=r"gt\.json: annotations\[2\] \(id 12\): no 'distance' key"):
        list(convert_coco(gt, res))
    report = ConversionReport()
    frames = list(convert_coco(gt, res, {"Person": "pedestrian"}, assume_distance=30.0, report=report))
    p, crowd = frames[0].ground_truth
    assert (p.class_id, p.box.as_tuple(), p.distance, p.track_id) == ("pedestrian", (10, 20, 40, 60), 12.5, "4")
    assert (crowd.class_id, crowd.ignore, crowd.box.as_tuple()) == ("car", True, (100, 100, 150, 120))
    (c,) = frames[1].ground_truth
    assert (c.class_id, c.distance) == ("car", 30.0)
    (d,) = frames[1].detections
    assert (d.box.as_tuple(), d.score) == ((6, 6, 16, 16), 0.8)
    assert report.skipped == {} and report.ignore_regions == {"iscrowd regions": 1}
    assert any("assumed distance 30 m" in n for n in report.notes)


def test_convert_command_writes_a_dataset_the_other_commands_read(tmp_path, capsys):
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "000000.txt").write_text(LABEL)
    out = tmp_path / "k.jsonl"
    assert main(["convert", "kitti", str(tmp_path / "labels"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "kept 1 'DontCare' regions as ignore regions" in printed and "Pedestrian -> pedestrian" in printed
    (frame,) = read_jsonl_frames(out)
    assert sorted((g.class_id, g.ignore) for g in frame.ground_truth) == [("DontCare", True), ("car", False),
                                                                          ("pedestrian", False)]
    assert main(["convert", "kitti", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "not a folder of KITTI label files" in capsys.readouterr().err
    assert main(["convert", "coco", str(tmp_path / "nope.json"), "--out", str(out), "--class-map", "x"]) == 2
    assert "--class-map 'x'" in capsys.readouterr().err


def test_public_helpers_write_a_bag_the_evaluator_reads(tmp_path):
    """The README's 'your own bag' recipe, using only the public names of perception_safety.io."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    import perception_safety.io as psio
    from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject

    store = psio.register_vision_msgs(get_typestore(Stores.ROS2_KILTED))
    assert "vision_msgs/msg/Detection2DArray" in store.fielddefs
    frames = [
        Frame(stamp_ns=i * 10**8, detections=(Detection(Box(0, 0, 10, 10), "car", 0.9),),
              ground_truth=(GroundTruthObject(Box(0, 0, 10, 10), "car", 15.0),), frame_id=str(i))
        for i in range(3)
    ]  # fmt: skip
    assert psio.write_frames(tmp_path / "bag", frames) == 3
    back = list(psio.read_frames(tmp_path / "bag"))
    assert [f.ground_truth[0].distance for f in back] == [15.0, 15.0, 15.0]
    with Writer(tmp_path / "raw", version=9) as w:  # plain rosbags with the registered store also works
        conn = w.add_connection("/detections", "vision_msgs/msg/Detection2DArray", typestore=store)
        assert conn.msgtype == "vision_msgs/msg/Detection2DArray"
