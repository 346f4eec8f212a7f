"""Issue 25 item 8: `render` on boxes at 1e308 px (finite, so legal) draws them to the edge instead of a cv2 crash."""

from __future__ import annotations

import cv2
import numpy as np

from perception_safety.cli import main
from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import CameraInfoSpec, write_frames
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.report.overlay import WATCHED, draw_overlay

W, H = 320, 180
REGION = {"left": 70, "top": 110, "width": 180, "height": 70, "units": "px", "image_size": [W, H]}
CFG = MonitorsConfig.model_validate({"stop_region": {"region": REGION}})


def test_huge_box_is_drawn_to_the_image_edge():
    frame = Frame(0, (Detection(Box(10, 20, 1e308, 1e308), "pedestrian", 0.9),), image=np.zeros((H, W, 3), np.uint8))
    img = draw_overlay(frame, [], CFG)
    assert (img[60, 8:13] == np.array(WATCHED, np.uint8)).all(axis=1).any()  # its left edge at x = 10


def test_render_command_on_1e308_boxes_writes_the_video(tmp_path, capsys):
    rng = np.random.default_rng(1)
    dets = (Detection(Box(0, 0, 1e308, 1e308), "car", 0.5),
            Detection(Box(-5e307, -5e307, 5e307, 5e307), "pedestrian", 0.9))
    gts = (GroundTruthObject(Box(1e307, 1e307, 1e308, 1e308), "pedestrian", 5.0),)
    frames = [Frame(k * 50_000_000, dets, gts, image=rng.integers(0, 256, (H, W, 3), dtype=np.uint8))
              for k in range(6)]
    write_frames(tmp_path / "bag", frames, jpeg_quality=90, camera_info=CameraInfoSpec((W, H), (160, 160, 160, 90)))
    config = tmp_path / "monitors.yaml"
    config.write_text("monitors:\n  stop_region:\n    region: {left: 70, top: 110, width: 180, height: 70, units: px, "
                      "image_size: [320, 180]}\n")
    out = tmp_path / "v.mp4"
    assert main(["render", str(tmp_path / "bag"), "--out", str(out), "--monitors", str(config)]) == 0
    assert "wrote" in capsys.readouterr().out
    cap = cv2.VideoCapture(str(out))
    n = 0
    while cap.read()[0]:
        n += 1
    assert n == 6
