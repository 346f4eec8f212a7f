"""``carla_ground_truth`` up to the server boundary: class mapping, actor selection, intrinsics on carla's own
types, the no-server failure of the real node process (exit 2, naming host and port)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
import yaml

carla = pytest.importorskip("carla")

from perception_safety.ros.carla_ground_truth_node import (  # noqa: E402
    GroundTruthParams,
    camera_intrinsics,
    class_of,
    scene_actors,
)

from ..sim.test_carla_backend import _Actor  # noqa: E402


def test_class_mapping_first_glob_wins_and_unmapped_is_none():
    classes = GroundTruthParams().class_map()
    assert class_of("walker.pedestrian.0012", classes) == "pedestrian"
    assert class_of("vehicle.tesla.model3", classes) == "car"
    assert class_of("static.prop.bench", classes) is None
    assert class_of("vehicle.bh.crossbike", {"vehicle.bh.*": "bicycle", "vehicle.*": "car"}) == "bicycle"


def test_bad_class_entry_is_refused_with_its_index():
    with pytest.raises(ValueError, match=r"classes\[1\]: expected 'glob=class'"):
        GroundTruthParams(classes=["vehicle.*=car", "walker.*"])


def test_scene_actors_skip_the_ego_unmapped_and_far_actors():
    def actor(i, type_id, x):
        return _Actor(i, type_id, carla.Transform(carla.Location(x=x), carla.Rotation()), carla.BoundingBox())

    ego = actor(1, "vehicle.tesla.model3", 0.0)
    actors = [ego, actor(2, "vehicle.audi.a2", 30.0), actor(3, "walker.pedestrian.0001", 12.0),
              actor(4, "static.prop.bench", 5.0), actor(5, "vehicle.mini.cooper_s", 150.0)]
    got = scene_actors(actors, ego, GroundTruthParams().class_map(), 100.0)
    assert [(a.id, cls, track) for a, cls, track in got] == [(2, "car", "2"), (3, "pedestrian", "3")]


def test_intrinsics_from_the_camera_actor_attributes():
    cam = _Actor(9, "sensor.camera.rgb", carla.Transform(), carla.BoundingBox(),
                 {"image_size_x": "800", "image_size_y": "600", "fov": "90.0", "role_name": "rgb_front"})
    k = camera_intrinsics(cam)
    assert (k.width, k.height, k.cx, k.cy) == (800, 600, 400.0, 300.0)
    assert k.fx == pytest.approx(400.0)  # f = W / (2 tan(45 deg))


@pytest.mark.ros
def test_node_without_a_server_exits_2_naming_host_and_port(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    doc = {"carla_ground_truth": {"ros__parameters": {"carla": {"host": "127.0.0.1", "port": port, "timeout_s": 1.0}}}}
    params = tmp_path / "gt.yaml"
    params.write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "perception_safety.ros.carla_ground_truth_node", "--ros-args",
                           "--params-file", str(params)], env=dict(os.environ), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"no CARLA server answered at 127.0.0.1:{port}" in proc.stderr
    assert "carla_ground_truth parameters carla.host/port/timeout_s" in proc.stderr
