"""The CARLA backend: the same scenario contract on a CARLA server through the real ``carla`` client.

Synchronous mode at the scenario's fps; ego, parked cars and a walker placed relative to a map spawn
point (the scenario frame's origin); an RGB camera with the scenario's intrinsics and mounting, a
collision sensor; ground truth by projecting the actors' bounding boxes with the camera intrinsics
(`perception_safety.sim.camera`), optionally occlusion-checked by ray casts. ``close`` restores the
world's settings and destroys every spawned actor, also after an error. ``carla`` is imported
lazily: nothing else in the package needs it.
"""

from __future__ import annotations

import math
import queue
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from perception_safety.core.types import EgoState, GroundTruthObject
from perception_safety.errors import PerceptionSafetyError
from perception_safety.executors.slots import SlotUnavailableError
from perception_safety.sim.camera import Intrinsics, project_cuboid
from perception_safety.sim.scenario import Control, Observation, ScenarioConfig


class CarlaBackendError(PerceptionSafetyError):
    """The CARLA server is unreachable or refused part of the scenario set-up."""


class CarlaServerUnavailableError(CarlaBackendError, SlotUnavailableError):
    """No CARLA server answered: with a pool of servers, the episode is run on another one."""


class CarlaConfig(BaseModel):
    """Key ``carla`` of the ``episodes`` section."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    host: str = "localhost"
    port: int = Field(default=2000, ge=1, le=65535)
    servers: tuple[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.\-\[\]:]+:[0-9]{1,5}$")], ...] = Field(
        default=(), description="a pool of servers as HOST:PORT (then host/port are unused): one episode per "
        "server at a time; a server that stops answering is dropped and its episode run on another"
    )
    timeout_s: float = Field(default=10.0, gt=0.0)
    map: str = Field(default="Town01", description="loaded when the server runs another map; '' keeps the current")
    ego_spawn_index: int = Field(default=0, ge=0, description="index into the map's recommended spawn points")
    ego_blueprint: str = "vehicle.tesla.model3"
    parked_blueprints: tuple[str, ...] = ("vehicle.audi.a2", "vehicle.nissan.micra", "vehicle.mini.cooper_s")
    walker_blueprint: str = "walker.pedestrian.0001"
    walker_control: Literal["direct", "ai"] = Field(
        default="direct", description="direct: WalkerControl each tick; ai: controller.ai.walker go_to_location"
    )
    spawn_lift_m: float = Field(default=0.3, ge=0.0, description="spawn height above the ground, m")
    occlusion_check: bool = Field(default=True, description="drop actors whose box centre is hidden (world.cast_ray)")
    frame_timeout_s: float = Field(default=5.0, gt=0.0, description="wait for a camera image after a tick")
    pedestrian_class: str = "pedestrian"
    car_class: str = "car"


def _carla() -> Any:
    try:
        import carla
    except ImportError as exc:  # pragma: no cover - carla is in requirements.txt
        raise CarlaBackendError("the CARLA backend needs the 'carla' client package (pip install carla)") from exc
    return carla


# --- geometry shared with the unit tests (work without a server) ---------------------------------


def scenario_to_local(x: float, y: float, z: float) -> tuple[float, float, float]:
    """Scenario frame (x forward, y left, z up) to CARLA's actor-local frame (x forward, y right, z up)."""
    return (x, -y, z)


def scenario_transform(origin: Any, x: float, y: float, z: float, yaw_deg: float = 0.0) -> Any:
    """World `carla.Transform` of a scenario-frame point; ``yaw_deg`` is counter-clockwise (scenario
    frame, to the left) from the origin's heading, i.e. CARLA yaw ``origin.yaw - yaw_deg``."""
    carla = _carla()
    lx, ly, lz = scenario_to_local(x, y, z)
    loc = origin.transform(carla.Location(x=lx, y=ly, z=lz))
    rot = origin.rotation
    return carla.Transform(
        carla.Location(x=loc.x, y=loc.y, z=loc.z), carla.Rotation(pitch=0.0, yaw=rot.yaw - yaw_deg, roll=0.0)
    )


def spawn_plan(cfg: ScenarioConfig, origin: Any, lift: float = 0.3) -> dict[str, Any]:
    """World transforms of everything the scenario spawns, relative to the ego's spawn ``origin``.

    Keys: ``ego``, ``parked`` (list), ``walker``, ``walker_goal`` (Location), ``walker_direction``
    (unit Vector3D in world axes), ``camera`` (relative to the ego).
    """
    carla = _carla()
    p = cfg.pedestrian
    ego = scenario_transform(origin, 0.0, cfg.ego.lane_y, lift)
    parked = [scenario_transform(origin, c.x, c.y, lift) for c in cfg.parked_cars]
    walker = scenario_transform(origin, p.x, p.y_start, lift + p.height / 2.0, 90.0 if p.y_end > p.y_start else -90.0)
    goal = scenario_transform(origin, p.x, p.y_end, lift).location
    d = goal - walker.location
    n = math.sqrt(d.x * d.x + d.y * d.y) or 1.0
    cam = cfg.camera
    cx, cy, cz = scenario_to_local(cam.x, cam.y, cam.z)
    return {
        "ego": ego,
        "parked": parked,
        "walker": walker,
        "walker_goal": goal,
        "walker_direction": carla.Vector3D(x=d.x / n, y=d.y / n, z=0.0),
        "camera": carla.Transform(carla.Location(x=cx, y=cy, z=cz), carla.Rotation(pitch=cam.pitch_deg)),
    }


def world_to_camera(points_world: np.ndarray, camera_inverse_matrix: Any) -> np.ndarray:
    """World points ``(n, 3)`` into the camera's forward/left/up frame, given its inverse 4x4 matrix."""
    m = np.asarray(camera_inverse_matrix, dtype=np.float64)
    homo = np.hstack([np.asarray(points_world, dtype=np.float64), np.ones((len(points_world), 1))])
    local = homo @ m.T
    return np.stack([local[:, 0], -local[:, 1], local[:, 2]], axis=1)


def bbox_world_corners(bbox: Any, actor_transform: Any) -> np.ndarray:
    """The 8 world-frame corners ``(8, 3)`` of an actor's `carla.BoundingBox`."""
    return np.array([[v.x, v.y, v.z] for v in bbox.get_world_vertices(actor_transform)], dtype=np.float64)


def project_actor_box(
    k: Intrinsics, bbox: Any, actor_transform: Any, camera_transform: Any
) -> Any:
    """2D pixel box of an actor's bounding box seen by the camera (None when not in view)."""
    corners = world_to_camera(bbox_world_corners(bbox, actor_transform), camera_transform.get_inverse_matrix())
    return project_cuboid(k, corners)


def ego_frame_position(point_world: Any, ego_transform: Any) -> tuple[float, float, float]:
    """A world location in the ego frame (x forward, y left, z up), metres."""
    m = np.asarray(ego_transform.get_inverse_matrix(), dtype=np.float64)
    x, y, z, _ = m @ np.array([point_world.x, point_world.y, point_world.z, 1.0])
    return (float(x), float(-y), float(z))


def image_to_rgb(raw: bytes | memoryview, width: int, height: int) -> np.ndarray:
    """CARLA's BGRA raw image bytes to an HxWx3 RGB uint8 array."""
    bgra = np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 4)
    return np.ascontiguousarray(bgra[:, :, 2::-1])


def visible(world: Any, cam_loc: Any, target: Any, actor: Any) -> bool:
    """Nothing but the actor itself lies on the ray from the camera to ``target`` (its box centre)."""
    hits = world.cast_ray(cam_loc, target)
    dist = cam_loc.distance(target)
    ext = actor.bounding_box.extent
    margin = math.sqrt(ext.x**2 + ext.y**2 + ext.z**2)
    # hits right at the camera are the ego's own body (the camera sits on it)
    return all(
        cam_loc.distance(h.location) >= dist - margin or cam_loc.distance(h.location) < _SELF_HIT_M for h in hits
    )


def actors_ground_truth(
    world: Any,
    k: Intrinsics,
    camera_transform: Any,
    ego_transform: Any,
    actors: Sequence[tuple[Any, str, str]],
    occlusion_check: bool = True,
) -> tuple[GroundTruthObject, ...]:
    """Ground truth of ``(actor, class, track id)`` seen by a camera: the actor's 3D bounding box projected with
    the camera's intrinsics and pose (amodal 2D box, clipped to the image), dropped when out of view or (with
    ``occlusion_check``) hidden; position = box centre in the ego frame. Used by the backend and the ROS node."""
    carla = _carla()
    out = []
    for actor, cls, track in actors:
        tr = actor.get_transform()
        box = project_actor_box(k, actor.bounding_box, tr, camera_transform)
        if box is None:
            continue
        loc = actor.bounding_box.location
        # carla's Transform.transform works in place on its argument: hand it a copy
        c = tr.transform(carla.Location(x=loc.x, y=loc.y, z=loc.z))
        centre = carla.Location(x=c.x, y=c.y, z=c.z)
        if occlusion_check and not visible(world, camera_transform.location, centre, actor):
            continue
        out.append(GroundTruthObject.at_position(box, cls, ego_frame_position(centre, ego_transform), track))
    return tuple(out)


def connect(cfg: CarlaConfig, keys: str = "episodes.carla.host/port/timeout_s") -> tuple[Any, Any]:
    """Client and world; one clear error naming host, port, timeout (and the config ``keys``) when no server
    answers."""
    carla = _carla()
    client = carla.Client(cfg.host, cfg.port)
    client.set_timeout(cfg.timeout_s)
    try:
        world = client.get_world()
    except RuntimeError as exc:
        raise CarlaServerUnavailableError(
            f"no CARLA server answered at {cfg.host}:{cfg.port} within the {cfg.timeout_s:g} s timeout "
            f"({keys}). Start the CARLA simulator first, e.g. "
            f"'./CarlaUE4.sh -RenderOffScreen -carla-rpc-port={cfg.port}' (CARLA 0.9.x) on that host, "
            f"or run the embedded simulator with --backend builtin. ({exc})"
        ) from exc
    return client, world


class CarlaBackend:
    """The scenario on a CARLA server. Use as a context manager or call ``close``."""

    name = "carla"

    def __init__(self, cfg: ScenarioConfig, options: CarlaConfig | None = None) -> None:
        self.cfg = cfg
        self.options = options or CarlaConfig()
        self.k = Intrinsics.from_fov(cfg.camera.width, cfg.camera.height, cfg.camera.fov_deg)
        self.client, self.world = connect(self.options)
        self._original_settings: Any = None
        self._actors: list[Any] = []
        self._sensors: list[Any] = []
        self._controller: Any = None
        self._images: queue.Queue[Any] = queue.Queue()
        self._collisions: list[int] = []
        self._index = 0
        self._braking = False
        self._collided = False
        self.ego: Any = None
        self.walker: Any = None
        self.parked: list[Any] = []
        self.camera: Any = None

    def __enter__(self) -> CarlaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- contract -------------------------------------------------------------------------------
    def reset(self, seed: int = 0) -> Observation:
        """Tear down any previous episode, set up synchronous mode and spawn the scenario; frame 0."""
        self._destroy_actors()
        self.k = Intrinsics.from_fov(self.cfg.camera.width, self.cfg.camera.height, self.cfg.camera.fov_deg)
        try:
            self._setup(seed)
            return self._tick_and_observe()
        except Exception:
            self.close()
            raise

    def step(self, control: Control) -> Observation:
        try:
            self._apply(control)
            return self._tick_and_observe()
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Destroy every spawned actor and restore the world's original settings (idempotent)."""
        try:
            self._destroy_actors()
        finally:
            if self._original_settings is not None:
                try:
                    self.world.apply_settings(self._original_settings)
                finally:
                    self._original_settings = None

    # -- set-up ---------------------------------------------------------------------------------
    def _setup(self, seed: int) -> None:
        carla = _carla()
        opt = self.options
        if opt.map and not self.world.get_map().name.endswith(opt.map):
            self.world = self.client.load_world(opt.map)
        if self._original_settings is None:
            self._original_settings = self.world.get_settings()
        settings = self.world.get_settings()
        settings.synchronous_mode = True
        settings.fixed_delta_seconds = 1.0 / self.cfg.fps
        self.world.apply_settings(settings)
        spawn_points = self.world.get_map().get_spawn_points()
        if opt.ego_spawn_index >= len(spawn_points):
            raise CarlaBackendError(
                f"episodes.carla.ego_spawn_index: {opt.ego_spawn_index} but map {opt.map!r} has "
                f"{len(spawn_points)} spawn points"
            )
        plan = spawn_plan(self.cfg, spawn_points[opt.ego_spawn_index], opt.spawn_lift_m)
        lib = self.world.get_blueprint_library()
        rng = np.random.default_rng(seed)

        def blueprint(name: str) -> Any:
            try:
                return lib.find(name)
            except (IndexError, RuntimeError) as exc:
                raise CarlaBackendError(f"episodes.carla: blueprint {name!r} not in the server's library") from exc

        def spawn(bp: Any, transform: Any, what: str, attach_to: Any = None) -> Any:
            actor = self.world.try_spawn_actor(bp, transform, attach_to) if attach_to else self.world.try_spawn_actor(
                bp, transform
            )
            if actor is None:
                raise CarlaBackendError(
                    f"episodes.carla: could not spawn {what} at {transform} (occupied or off the map; "
                    f"move it in episodes.scenario or choose another ego_spawn_index)"
                )
            self._actors.append(actor)
            return actor

        ego_bp = blueprint(opt.ego_blueprint)
        ego_bp.set_attribute("role_name", "hero")
        self.ego = spawn(ego_bp, plan["ego"], "the ego vehicle")
        self.parked = []
        for i, tr in enumerate(plan["parked"]):
            name = opt.parked_blueprints[int(rng.integers(len(opt.parked_blueprints)))] if opt.parked_blueprints else ""
            car = spawn(blueprint(name), tr, f"parked car #{i}")
            car.set_simulate_physics(False)
            self.parked.append(car)
        walker_bp = blueprint(opt.walker_blueprint)
        if walker_bp.has_attribute("is_invincible"):
            walker_bp.set_attribute("is_invincible", "false")
        self.walker = spawn(walker_bp, plan["walker"], "the pedestrian")
        self._walker_direction = plan["walker_direction"]
        self._walker_goal = plan["walker_goal"]
        if opt.walker_control == "ai":
            self._controller = spawn(blueprint("controller.ai.walker"), carla.Transform(), "the walker controller",
                                     self.walker)
        cam_bp = blueprint("sensor.camera.rgb")
        cam_bp.set_attribute("image_size_x", str(self.cfg.camera.width))
        cam_bp.set_attribute("image_size_y", str(self.cfg.camera.height))
        cam_bp.set_attribute("fov", str(self.cfg.camera.fov_deg))
        cam_bp.set_attribute("sensor_tick", "0.0")
        self.camera = spawn(cam_bp, plan["camera"], "the RGB camera", self.ego)
        self._sensors.append(self.camera)
        self._images = queue.Queue()
        self.camera.listen(self._images.put)
        col = spawn(blueprint("sensor.other.collision"), carla.Transform(), "the collision sensor", self.ego)
        self._sensors.append(col)
        self._collisions = []
        col.listen(self._on_collision)
        self._index = 0
        self._braking = False
        self._collided = False
        self._walking = False
        self.ego.set_target_velocity(self._forward(self.cfg.ego.speed))
        self.ego.enable_constant_velocity(carla.Vector3D(x=self.cfg.ego.speed, y=0.0, z=0.0))

    def _on_collision(self, event: Any) -> None:
        self._collisions.append(int(event.other_actor.id))

    def _forward(self, speed: float) -> Any:
        f = self.ego.get_transform().get_forward_vector()
        return f * speed

    def _apply(self, control: Control) -> None:
        carla = _carla()
        if control == Control.BRAKE and not self._braking:
            self._braking = True
            self.ego.disable_constant_velocity()
        if self._braking:
            self.ego.apply_control(carla.VehicleControl(throttle=0.0, brake=1.0, hand_brake=False))
        t = (self._index + 1) / self.cfg.fps
        if not self._walking and t >= self.cfg.pedestrian.start_time:
            self._walking = True
            if self._controller is not None:
                self._controller.start()
                self._controller.go_to_location(self._walker_goal)
                self._controller.set_max_speed(self.cfg.pedestrian.speed)
        if self._walking and self._controller is None:
            loc = self.walker.get_location()
            remaining = math.hypot(self._walker_goal.x - loc.x, self._walker_goal.y - loc.y)
            speed = self.cfg.pedestrian.speed if remaining > 0.2 else 0.0
            self.walker.apply_control(carla.WalkerControl(direction=self._walker_direction, speed=speed))

    # -- per frame ------------------------------------------------------------------------------
    def _tick_and_observe(self) -> Observation:
        frame_id = self.world.tick()
        image = None
        while image is None:
            try:
                data = self._images.get(timeout=self.options.frame_timeout_s)
            except queue.Empty as exc:
                raise CarlaBackendError(
                    f"no camera image for simulator frame {frame_id} within {self.options.frame_timeout_s:g} s"
                ) from exc
            if data.frame >= frame_id:
                image = image_to_rgb(data.raw_data, data.width, data.height)
        hit = self.walker is not None and self.walker.id in self._collisions and not self._collided
        self._collided = self._collided or hit
        obs = Observation(
            index=self._index,
            stamp_ns=round(self._index * 1e9 / self.cfg.fps),
            image=image,
            ground_truth=self._ground_truth(),
            ego=self._ego_state(),
            collision=hit,
            collided=self._collided,
        )
        self._index += 1
        return obs

    def _ego_state(self) -> EgoState:
        tr = self.ego.get_transform()
        v = self.ego.get_velocity()
        return EgoState(tr.location.x, -tr.location.y, -math.radians(tr.rotation.yaw), math.hypot(v.x, v.y))

    def _ground_truth(self) -> tuple[GroundTruthObject, ...]:
        actors: list[tuple[Any, str, str]] = [(self.walker, self.options.pedestrian_class, "pedestrian_0")]
        actors += [(c, self.options.car_class, f"car_{i}") for i, c in enumerate(self.parked)]
        return actors_ground_truth(self.world, self.k, self.camera.get_transform(), self.ego.get_transform(), actors,
                                   self.options.occlusion_check)

    def _destroy_actors(self) -> None:
        errors: list[str] = []
        for sensor in self._sensors:
            _quietly(sensor.stop, errors)
        if self._controller is not None:
            _quietly(self._controller.stop, errors)
        for actor in reversed(self._actors):
            _quietly(actor.destroy, errors)
        self._sensors, self._actors = [], []
        self._controller = None
        self.ego = self.walker = self.camera = None
        self.parked = []


_SELF_HIT_M = 0.5


def _quietly(fn: Callable[[], Any], errors: list[str]) -> None:
    try:
        fn()
    except RuntimeError as exc:
        errors.append(str(exc))
