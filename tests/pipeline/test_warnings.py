"""No silent surprises in `evaluate`: KITTI-style labels, a wrong BBSL image size and an empty PCD target warn."""

from __future__ import annotations

import dataclasses
import json

from perception_safety.cli import main
from perception_safety.core import Detection, Frame
from perception_safety.io.bag import write_frames

from .conftest import scene_frames

CONFIG = """
evaluate:
  analyses: [confusion, pcd, bbsl]
  pcd_targets:
    - {name: pedestrian, class_id: pedestrian}
confusion:
  classes: {ped: [pedestrian], obs: [car]}
bbsl:
  image_size: [1242, 375]
  target_classes: [pedestrian]
"""


def _kitti(frames: list[Frame]) -> list[Frame]:
    """The same scenes labelled the KITTI way (Pedestrian, Car)."""
    cap = {"pedestrian": "Pedestrian", "car": "Car"}
    return [
        Frame(
            f.stamp_ns,
            tuple(Detection(d.box, cap[d.class_id], d.score) for d in f.detections),
            tuple(dataclasses.replace(g, class_id=cap[g.class_id]) for g in f.ground_truth),
            f.ego,
        )
        for f in frames
    ]


def test_kitti_labels_wrong_image_size_and_empty_target_warn(tmp_path, capsys):
    write_frames(tmp_path / "bags" / "kitti", _kitti(scene_frames(40, 3)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(cfg), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    codes = {w["code"]: w["message"] for w in res["warnings"]}
    assert "'Pedestrian' matches class 'ped' ignoring case" in codes["unmapped_ground_truth"]
    assert "100.0 %" in codes["unmapped_ground_truth"] and "unmapped_detections" in codes
    assert "all zeros" in codes["confusion_empty"]
    assert "1242×375" in codes["bbsl_image_size"]
    assert "class_id 'pedestrian'" in codes["pcd_empty_target"]
    # in the report (top section) and on the console too
    html = (out / "report.html").read_text()
    assert html.index("id='warnings'") < html.index("id='summary'") and "ignoring case" in html
    assert "warning [pcd]" in capsys.readouterr().out.replace("\n", " ")
    assert any(m["value"] == "not computed" for m in res["summary"])
