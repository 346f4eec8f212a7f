"""`perception-safety monitor` with every shipped config on bags of four real cameras (issue 23, "Done when"): a
pedestrian in the ego lane at 8 m and at 20 m is a stop on every frame, or the command refuses the configuration by
name (exit 2, nothing written), never an OK. Cameras and boxes: tests/camera_scenes.py (independent pinhole model)."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main

CAMERA_NAMES = ("kitti_like", "vga_4_3", "wide_1080p", "demo_720p")
CONFIGS = ("config/monitors.yaml", "config/safety_monitor.yaml", "config/online.yaml")


@pytest.fixture(scope="module")
def camera_bags(tmp_path_factory, camera_scenes):
    """One bag per camera: a frame per lane pedestrian, with the camera's CameraInfo."""
    from perception_safety.io.bag import CameraInfoSpec, write_frames

    out = {}
    for cam in camera_scenes.CAMERAS:
        frames = [cam.frame(1_000_000_000 + 50_000_000 * i, x, y)
                  for i, (x, y) in enumerate(camera_scenes.LANE_PEDESTRIANS)]
        path = tmp_path_factory.mktemp(cam.name) / "bag"
        write_frames(path, frames, camera_info=CameraInfoSpec((cam.width, cam.height),
                                                              (cam.fx, cam.fy, cam.cx, cam.cy)))
        out[cam.name] = path
    return out


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("camera", CAMERA_NAMES)
def test_shipped_config_stops_on_every_lane_pedestrian_or_exits_2_naming_it(camera_bags, camera_scenes, tmp_path,
                                                                          capsys, config, camera):
    cam = next(c for c in camera_scenes.CAMERAS if c.name == camera)
    out = tmp_path / "o"
    code = main(["monitor", str(camera_bags[camera]), "--config", config, "--out", str(out)])
    err = capsys.readouterr().err
    if config == "config/safety_monitor.yaml":
        # the live-camera config does not know the mounting: refused by name, the bag, the key and the image size
        assert code == 2, err
        assert str(camera_bags[camera]) in err and "stop_region.corridor: " in err, err
        assert f"monitors.camera.height_m) for the {cam.size} image" in err, err
        assert not (out / "verdicts.jsonl").exists()
        return
    assert code == 0, err
    lines = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert len(lines) == len(camera_scenes.LANE_PEDESTRIANS)
    for line, (x, y) in zip(lines, camera_scenes.LANE_PEDESTRIANS, strict=True):
        # the stop rule itself fires (not only the plausibility monitor), and the frame is a stop
        assert line["stop"] and "stop_region" in line["alarms"], (camera, x, y, line)
    far = [line for line, (x, _) in zip(lines, camera_scenes.LANE_PEDESTRIANS, strict=True) if x == 20.0]
    assert all("stop_region: person box stands in the ground corridor" in line["reasons"] for line in far)


def test_a_json_lines_dataset_is_judged_on_the_camera_given_with_camera(camera_scenes, tmp_path, capsys):
    """A dataset (boxes, no image, no CameraInfo) of the 4:3 camera: with its calibration file every lane pedestrian
    stops the car; with only its size the corridor has no camera model, and without any camera nothing can be placed:
    both refused by name (exit 2)."""
    from dataclasses import replace

    from perception_safety.io.dataset import write_jsonl_frames

    cam = next(c for c in camera_scenes.CAMERAS if c.name == "vga_4_3")
    frames = [replace(cam.frame(1_000_000_000 + 50_000_000 * i, x, y), image=None, camera=None, episode="drive1")
              for i, (x, y) in enumerate(camera_scenes.LANE_PEDESTRIANS)]
    data = tmp_path / "vga.jsonl"
    write_jsonl_frames(data, frames)
    calib = tmp_path / "vga.yaml"
    calib.write_text(f"image_width: 640\nimage_height: 480\ncamera_matrix: {{rows: 3, cols: 3, data: [{cam.fx}, 0, "
                     f"{cam.cx}, 0, {cam.fy}, {cam.cy}, 0, 0, 1]}}\n")
    out = tmp_path / "o"
    code = main(["monitor", str(data), "--config", "config/monitors.yaml", "--camera", str(calib), "--out", str(out)])
    text = capsys.readouterr()
    assert code == 0, text.err
    lines = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [x["stop"] for x in lines] == [True] * 4 and all("stop_region" in x["alarms"] for x in lines)
    assert lines[0]["bag"] == f"{data}#drive1"
    assert "no images, so the contrast monitor cannot judge" in text.err
    assert "4 frames judged: alarm on 4, stop on 4" in text.out
    for extra, message in ((["--camera", "640x480"], "stop_region.corridor: a metric ground corridor |y| <= 1.5 m, x "
                            "from 0 m to 25 m needs the camera model, but the 640x480 image has no CameraInfo"),
                           ([], "image size unknown (the frame has no image and no CameraInfo)")):
        code = main(["monitor", str(data), "--config", "config/monitors.yaml", *extra, "--out", str(tmp_path / "x")])
        err = capsys.readouterr().err
        assert code == 2 and str(data) in err and message in err, err
