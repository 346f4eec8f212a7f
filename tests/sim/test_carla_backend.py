"""CARLA backend without a server: the no-server error, and spawn/projection logic on carla's own types."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

carla = pytest.importorskip("carla")

from perception_safety.sim.camera import Intrinsics  # noqa: E402
from perception_safety.sim.carla_backend import (  # noqa: E402
    CarlaBackend,
    CarlaBackendError,
    CarlaConfig,
    ego_frame_position,
    image_to_rgb,
    project_actor_box,
    spawn_plan,
)
from perception_safety.sim.scenario import ScenarioConfig  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_server_fails_within_timeout_naming_host_port_and_what_to_start() -> None:
    port = _free_port()
    opts = CarlaConfig(host="127.0.0.1", port=port, timeout_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(CarlaBackendError) as info:
        CarlaBackend(ScenarioConfig(), opts)
    elapsed = time.monotonic() - t0
    msg = str(info.value)
    assert f"127.0.0.1:{port}" in msg
    assert "1 s timeout" in msg
    assert "CarlaUE4.sh" in msg and "--backend builtin" in msg
    # liveness, not speed: the client gives up after its timeout instead of hanging
    assert elapsed < opts.timeout_s + 10.0


def test_spawn_plan_places_actors_relative_to_the_spawn_point() -> None:
    cfg = ScenarioConfig()
    origin = carla.Transform(carla.Location(x=100.0, y=50.0, z=0.5), carla.Rotation(yaw=90.0))
    plan = spawn_plan(cfg, origin, lift=0.3)
    # CARLA yaw 90: forward = +y_world, right = -x_world. The pedestrian 40 m ahead, 4.8 m to the right:
    w = plan["walker"].location
    assert (w.x, w.y) == pytest.approx((100.0 - 4.8, 50.0 + 40.0), abs=1e-4)
    assert w.z == pytest.approx(0.5 + 0.3 + cfg.pedestrian.height / 2)
    assert plan["walker"].rotation.yaw == pytest.approx(0.0)  # faces its goal (+x_world, the ego's left)
    car0 = plan["parked"][0].location
    assert (car0.x, car0.y) == pytest.approx((100.0 - 3.0, 50.0 + 20.0), abs=1e-4)
    assert len(plan["parked"]) == len(cfg.parked_cars)
    goal = plan["walker_goal"]
    assert (goal.x, goal.y) == pytest.approx((100.0 + 6.5, 50.0 + 40.0), abs=1e-4)
    d = plan["walker_direction"]
    assert (d.x, d.y, d.z) == pytest.approx((1.0, 0.0, 0.0), abs=1e-6)
    cam = plan["camera"]
    assert (cam.location.x, cam.location.y, cam.location.z) == pytest.approx((1.5, 0.0, 1.6))


def test_actor_box_projection_matches_hand_computation() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    camera = carla.Transform(carla.Location(x=0.0, y=0.0, z=1.0), carla.Rotation())
    actor = carla.Transform(carla.Location(x=10.0, y=0.0, z=0.0), carla.Rotation())
    bbox = carla.BoundingBox(carla.Location(x=0.0, y=0.0, z=1.0), carla.Vector3D(x=0.5, y=0.5, z=1.0))
    box = project_actor_box(k, bbox, actor, camera)
    assert box is not None
    # near face at 9.5 m, half-width 0.5 m, height -1..+1 m relative to the camera
    assert box.x_min == pytest.approx(640 - 640 * 0.5 / 9.5, abs=1e-3)
    assert box.x_max == pytest.approx(640 + 640 * 0.5 / 9.5, abs=1e-3)
    assert box.y_min == pytest.approx(360 - 640 * 1.0 / 9.5, abs=1e-3)
    assert box.y_max == pytest.approx(360 + 640 * 1.0 / 9.5, abs=1e-3)


def test_actor_to_the_right_projects_right_of_centre_with_a_turned_camera() -> None:
    k = Intrinsics.from_fov(1280, 720, 90.0)
    # camera heading +y_world (yaw 90); an actor 10 m ahead of it and 2 m to its right (-x_world)
    camera = carla.Transform(carla.Location(x=0.0, y=0.0, z=1.0), carla.Rotation(yaw=90.0))
    actor = carla.Transform(carla.Location(x=-2.0, y=10.0, z=1.0), carla.Rotation(yaw=90.0))
    bbox = carla.BoundingBox(carla.Location(), carla.Vector3D(x=0.01, y=0.01, z=0.01))
    box = project_actor_box(k, bbox, actor, camera)
    assert box is not None
    u, v = box.center
    assert u == pytest.approx(640 + 640 * 2.0 / 10.0, abs=0.5)
    assert v == pytest.approx(360.0, abs=0.5)


def test_ego_frame_position_is_forward_left_up() -> None:
    ego = carla.Transform(carla.Location(x=5.0, y=5.0, z=0.0), carla.Rotation(yaw=90.0))
    # 3 m ahead (+y_world) and 1 m to the ego's left (+x_world in CARLA's left-handed frame)
    x, y, z = ego_frame_position(carla.Location(x=6.0, y=8.0, z=1.0), ego)
    assert (x, y, z) == pytest.approx((3.0, 1.0, 1.0), abs=1e-5)


def test_image_bytes_bgra_to_rgb() -> None:
    bgra = np.array([[[1, 2, 3, 255], [4, 5, 6, 255]]], dtype=np.uint8)
    rgb = image_to_rgb(bgra.tobytes(), 2, 1)
    np.testing.assert_array_equal(rgb, [[[3, 2, 1], [6, 5, 4]]])


def test_episodes_cli_with_carla_and_no_server_exits_2_with_the_message(tmp_path, capsys) -> None:
    from perception_safety.cli import main

    from .conftest import write_tiny_config

    port = _free_port()
    cfg = write_tiny_config(
        tmp_path / "cfg",
        perturbations=[{"name": "brightness", "levels": [1]}],
        carla={"host": "127.0.0.1", "port": port, "timeout_s": 1.0},
    )
    rc = main(["episodes", "--config", str(cfg), "--backend", "carla", "--out", str(tmp_path / "out"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no CARLA server answered at 127.0.0.1:") and f":{port} " in err
    assert not list((tmp_path / "out").glob("logs/*.jsonl"))


def test_nothing_but_the_carla_backend_imports_carla() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import perception_safety.sim.sweep, perception_safety.commands.episodes\n"
        "from perception_safety.sim.carla_backend import spawn_plan\n"
        "assert 'carla' not in sys.modules, 'carla imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class _Actor:
    """Stand-in for a carla.Actor (needs a server): carla's own Transform and BoundingBox inside."""

    def __init__(self, actor_id, type_id, transform, bbox, attributes=None):
        self.id, self.type_id, self.bounding_box = actor_id, type_id, bbox
        self.attributes = attributes or {}
        self._tr = transform
        self.is_alive = True

    def get_transform(self):
        return self._tr


class _Hit:
    def __init__(self, location):
        self.location = location


class _World:
    """Stand-in for carla.World.cast_ray: the ray hits ``hits`` (carla.Location) wherever it goes."""

    def __init__(self, hits=()):
        self.hits = [_Hit(h) for h in hits]
        self.rays = []

    def cast_ray(self, a, b):
        self.rays.append((a, b))
        return self.hits


def _walker_ahead(distance):
    bbox = carla.BoundingBox(carla.Location(x=0.0, y=0.0, z=0.0), carla.Vector3D(x=0.3, y=0.3, z=0.9))
    tr = carla.Transform(carla.Location(x=distance, y=0.0, z=1.0), carla.Rotation())
    return _Actor(7, "walker.pedestrian.0001", tr, bbox)


def test_ground_truth_projects_boxes_and_gives_ego_frame_positions() -> None:
    from perception_safety.sim.carla_backend import actors_ground_truth

    k = Intrinsics.from_fov(1280, 720, 90.0)
    ego = carla.Transform(carla.Location(x=-1.5, y=0.0, z=0.0), carla.Rotation())  # camera 1.5 m ahead, 1 m up
    camera = carla.Transform(carla.Location(x=0.0, y=0.0, z=1.0), carla.Rotation())
    walker = _walker_ahead(10.0)
    behind = _Actor(8, "vehicle.audi.a2", carla.Transform(carla.Location(x=-20.0), carla.Rotation()),
                    carla.BoundingBox(carla.Location(), carla.Vector3D(x=2.0, y=1.0, z=0.8)))
    world = _World()
    (gt,) = actors_ground_truth(world, k, camera, ego, [(walker, "pedestrian", "7"), (behind, "car", "8")], True)
    # near face at 9.7 m, half-width 0.3 m, half-height 0.9 m, centred on the optical axis (hand computation)
    assert gt.box.x_min == pytest.approx(640 - 640 * 0.3 / 9.7, abs=1e-3)
    assert gt.box.y_max == pytest.approx(360 + 640 * 0.9 / 9.7, abs=1e-3)
    assert (gt.class_id, gt.track_id) == ("pedestrian", "7")
    assert gt.position == pytest.approx((11.5, 0.0, 1.0), abs=1e-4)  # box centre in the ego frame
    assert gt.distance == pytest.approx(np.hypot(11.5, 1.0), abs=1e-4)
    assert len(world.rays) == 1  # the car behind the camera is not in view: no ray cast for it


def test_ground_truth_drops_an_occluded_actor_but_not_one_hit_at_its_own_box() -> None:
    from perception_safety.sim.carla_backend import actors_ground_truth

    k = Intrinsics.from_fov(1280, 720, 90.0)
    ego = carla.Transform(carla.Location(x=-1.5), carla.Rotation())
    camera = carla.Transform(carla.Location(x=0.0, y=0.0, z=1.0), carla.Rotation())
    walker = [(_walker_ahead(10.0), "pedestrian", "7")]
    wall = _World(hits=[carla.Location(x=5.0, y=0.0, z=1.0)])  # something 5 m ahead, the walker at 10 m
    assert actors_ground_truth(wall, k, camera, ego, walker, occlusion_check=True) == ()
    assert len(actors_ground_truth(wall, k, camera, ego, walker, occlusion_check=False)) == 1
    own = _World(hits=[carla.Location(x=9.8, y=0.0, z=1.0)])  # the ray hits the walker's own box
    assert len(actors_ground_truth(own, k, camera, ego, walker, occlusion_check=True)) == 1
