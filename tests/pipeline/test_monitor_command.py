"""`perception-safety monitor` (issue 23 item 3) on recorded frames of the KITTI-like camera fixture: the stop
decision where the geometry says so, configuration errors named (exit 2), warnings for labels nothing watches."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main

#: (forward, left) of the pedestrian in each frame; None: no pedestrian
POSITIONS = [None, (40.0, 0.0), (8.4, -1.8), (8.4, -1.0), (25.0, 1.2), (35.0, 0.0), (8.0, 6.0)]
CALIB = """image_width: 1242
image_height: 375
camera_name: kitti_like
camera_matrix: {rows: 3, cols: 3, data: [721.5377, 0, 609.5593, 0, 721.5377, 172.854, 0, 0, 1]}
"""


@pytest.fixture(scope="module")
def kitti_bag(tmp_path_factory, kitti_scene):
    from perception_safety.io.bag import CameraInfoSpec, write_frames

    frames = [kitti_scene.frame(1_000_000_000 + 50_000_000 * i, [] if p is None else [p], label="Pedestrian")
              for i, p in enumerate(POSITIONS)]
    path = tmp_path_factory.mktemp("kitti") / "bag"
    k = kitti_scene.intrinsics()
    write_frames(path, frames, camera_info=CameraInfoSpec((k.width, k.height), (k.fx, k.fy, k.cx, k.cy)))
    write_frames(path.with_name("bag_without_camera_info"), frames)
    return path


def _no_info(bag):
    return bag.with_name("bag_without_camera_info")


def _write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text)
    return p


def _run(args, capsys):
    code = main(["monitor", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_shipped_config_stops_where_the_fraction_region_or_the_corridor_says(kitti_bag, tmp_path, capsys):
    code, out, err = _run([kitti_bag, "--config", "config/monitors.yaml", "--out", tmp_path / "o"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "o" / "verdicts.jsonl").read_text().splitlines()]
    # by hand (tests/monitors/test_real_camera.py): 8.4 m ahead stops (both lateral positions: the rectangle), 25 m
    # does not reach the rectangle's top row 243.75 (foot row 220.5) but stands in the 25 m corridor (placed with the
    # shipped 1.6 m mounting: the foot back-projects to 25 * 1.6 / 1.65 = 24.2 m, 1.16 m left); 35 and 40 m are
    # beyond both, 6 m left is outside both
    assert [x["stop"] for x in lines] == [False, False, True, True, True, False, False]
    assert set(lines[0]) >= {"stamp_ns", "level", "stop", "alarms", "reasons"}
    # each frame's pedestrian stands somewhere else: the plausibility monitor sees it pop up in the danger region
    assert lines[2]["alarms"] == ["plausibility", "stop_region"] and lines[2]["level"] == "ERROR"
    assert "stop_region: Pedestrian box overlaps the stop region" in lines[2]["reasons"]
    assert lines[1] == {**lines[1], "alarms": [], "level": "OK", "stop": False}
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["total"]["frames"] == 7 and summary["total"]["stops"] == 3 and summary["complete"] is True
    assert summary["total"]["per_monitor"]["stop_region"]["alarms"] == 3
    assert "stop_region: Pedestrian box stands in the ground corridor" in lines[4]["reasons"]
    assert "7 frames judged: alarm on 3, stop on 3" in out
    assert "warning: detections" not in out  # every label (Pedestrian) is watched by the @pedestrians preset


@pytest.mark.parametrize("camera", ["bag", "calibration file"])
def test_metric_corridor_with_the_bags_camera_info_or_a_calibration_file(kitti_bag, tmp_path, capsys, camera):
    cfg = _write(tmp_path, "m.yaml", """monitors:
  camera: {height_m: 1.65}
  stop_region:
    rule: corridor
    corridor: {half_width_m: 1.5, near_m: 2.0, far_m: 30.0}
""")
    calib = _write(tmp_path, "calib.yaml", CALIB)
    args = [kitti_bag] if camera == "bag" else [_no_info(kitti_bag), "--camera", calib]
    code, _, err = _run([*args, "--config", cfg, "--out", tmp_path / "o"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "o" / "verdicts.jsonl").read_text().splitlines()]
    # in the corridor: (8.4, -1.0) and (25, 1.2); 1.8 m right, 6 m left, 35 and 40 m ahead are not (frame 2 still
    # stops: its pedestrian pops up in the plausibility monitor's danger region, a ghost)
    assert ["stop_region" in x["alarms"] for x in lines] == [False, False, False, True, True, False, False]
    assert [x["stop"] for x in lines] == [False, False, True, True, True, False, False]


@pytest.mark.parametrize(("config", "camera", "message"), [
    ("""monitors:
  stop_region: {region: {units: px, left: 274, top: 468, width: 733, height: 252, image_size: [1280, 720]}}
""", None, r"stop_region\.region: px \(274, 468, 733, 252\) drawn for 1280x720, but the camera in use gives a "
           r"1242x375 image"),
    ("""monitors:
  camera: {height_m: 1.65}
  stop_region: {rule: corridor, corridor: {half_width_m: 1.5, far_m: 30.0}}
""", "1242x375", r"stop_region\.corridor: a metric ground corridor .* needs the camera model, but the 1242x375 "
                 r"image has no CameraInfo"),
    ("""monitors:
  plausibility: {warning_region: {units: fraction, left: 0.1, top: 0.2, width: 0.3, height: 0.3}}
  contrast: {roi: {units: px, left: 1300, top: 0, width: 10, height: 10, image_size: [1242, 375]}}
""", None, r"contrast\.roi: px \(1300, 0, 10, 10\) drawn for 1242x375 does not intersect the 1242x375 image"),
])
def test_regions_that_do_not_fit_the_camera_exit_2_naming_region_and_size(kitti_bag, tmp_path, capsys, config,
                                                                          camera, message):
    import re

    cfg = _write(tmp_path, "m.yaml", config)
    bag = _no_info(kitti_bag) if camera else kitti_bag
    extra = ["--camera", camera] if camera else []
    code, _, err = _run([bag, "--config", cfg, *extra, "--out", tmp_path / "o"], capsys)
    assert code == 2
    assert re.search(message, err), err
    assert str(bag) in err
    assert not (tmp_path / "o" / "verdicts.jsonl").exists()  # nothing half-written


def test_labels_nothing_watches_are_warned_with_counts(kitti_bag, tmp_path, capsys):
    cfg = _write(tmp_path, "m.yaml", "monitors:\n  stop_region: {watched_classes: [person]}\n"
                 "  plausibility: {watched_classes: [person]}\n")
    code, _, err = _run([kitti_bag, "--config", cfg, "--out", tmp_path / "o"], capsys)
    assert code == 0, err
    assert ("warning: detections: 6 of 6 label(s) match no watched class and are ignored: Pedestrian (6); "
            "Pedestrian look(s) like watched classes in another dataset's spelling: use a preset such as "
            "@pedestrians") in err
    lines = [json.loads(x) for x in (tmp_path / "o" / "verdicts.jsonl").read_text().splitlines()]
    assert not any(x["stop"] for x in lines)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("Pedestrian (6)" in w for w in summary["warnings"])


def test_braking_corridor_uses_the_recorded_odometry_when_the_node_params_name_it(tmp_path, capsys, kitti_scene):
    """With the node's params file (topics.odometry) the far edge follows the speed of the same stamp:
    near 2 m + v^2 / (2 * 4) + 2 m = 12 m at 8 m/s, so a pedestrian 10 m ahead stops and one 25 m ahead does not;
    without the odometry topic the far edge is far_m = 30 m and both stop."""
    import yaml

    from perception_safety.io.bag import CameraInfoSpec, write_frames

    k = kitti_scene.intrinsics()
    frames = [kitti_scene.frame(1_000_000_000 + 50_000_000 * i, [(x, 0.0)], speed=8.0)
              for i, x in enumerate((10.0, 25.0))]
    bag = tmp_path / "moving"
    write_frames(bag, frames, camera_info=CameraInfoSpec(k.size, (k.fx, k.fy, k.cx, k.cy)))
    monitors = {"camera": {"height_m": 1.65}, "plausibility": {"enabled": False},
                "stop_region": {"rule": "corridor", "corridor": {"half_width_m": 1.5, "near_m": 2.0, "far_m": 30.0,
                                "braking": {"deceleration_mps2": 4.0, "margin_m": 2.0}}}}
    stops = {}
    for odometry in ("/ego/odometry", ""):
        params = {"safety_monitor": {"ros__parameters": {"topics": {"odometry": odometry}, "monitors": monitors}}}
        cfg = _write(tmp_path, "params.yaml", yaml.safe_dump(params))
        out = tmp_path / f"o{len(stops)}"
        code, _, err = _run([bag, "--config", cfg, "--out", out], capsys)
        assert code == 0, err
        stops[odometry] = [json.loads(x)["stop"] for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert stops == {"/ego/odometry": [True, False], "": [True, True]}


def test_a_stop_rectangle_without_its_corridor_is_judged_with_a_warning(kitti_bag, tmp_path, capsys):
    """The paper's rule alone, with no ground corridor to check it against: judged, but never a silent OK."""
    cfg = _write(tmp_path, "m.yaml", "monitors:\n  stop_region: {rule: region}\n")
    code, _, err = _run([kitti_bag, "--config", cfg, "--out", tmp_path / "o"], capsys)
    assert code == 0, err
    assert ("warning: stop_region.region: no stop_region.corridor states the ground it must cover, so whether it "
            "reaches a pedestrian in the ego's path on this camera is not checked") in err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any(w.startswith("stop_region.region: no stop_region.corridor") for w in summary["warnings"])
