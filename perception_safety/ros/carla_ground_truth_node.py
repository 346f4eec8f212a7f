"""``carla_ground_truth`` node: per camera frame, the ground truth of the CARLA world as vision_msgs/Detection2DArray.

For each image on ``topics.image`` (the CARLA ROS bridge camera; only its header is read) the node projects the
3D bounding boxes of the world's vehicles and walkers into that camera with its intrinsics (image size and FOV
of the camera actor) and pose, drops hidden actors (ray cast, ``occlusion_check``), maps blueprint ids to
classes (``classes``: glob -> class) and publishes them stamped with the image's stamp on
``topics.ground_truth``, ego-frame position in ``results[0].pose.pose.position``, actor id in ``id``. The
projection is the CARLA backend's (`sim.carla_backend.actors_ground_truth`), one implementation for both. The
world state is read when the image arrives: in synchronous mode (the bridge ticks) that is the image's frame.
Without a CARLA server the node stops at start-up after ``carla.timeout_s`` with exit code 2 and the message
naming host and port. ``carla`` is imported lazily.
"""

from __future__ import annotations

import fnmatch
import struct
from typing import Any

from pydantic import Field, field_validator

from perception_safety.ros.params import StrictParams
from perception_safety.ros.runner import run_node

NODE_NAME = "carla_ground_truth"


_Strict = StrictParams


class Topics(_Strict):
    image: str = "/carla/ego_vehicle/rgb_front/image"
    ground_truth: str = "/scenario/ground_truth"


class CarlaParams(_Strict):
    host: str = "localhost"
    port: int = Field(default=2000, ge=1, le=65535)
    timeout_s: float = Field(default=10.0, gt=0.0, le=600.0)


class GroundTruthParams(_Strict):
    """Parameters of the node (``config/carla_ground_truth.yaml``); all read-only."""

    topics: Topics = Topics()
    carla: CarlaParams = CarlaParams()
    role_name: str = Field(default="ego_vehicle", description="role_name attribute of the ego vehicle")
    camera_role_name: str = Field(default="rgb_front", description="role_name of the RGB camera on the ego")
    classes: list[str] = Field(default_factory=lambda: ["walker.pedestrian.*=pedestrian", "vehicle.*=car"],
                               description="'blueprint id glob=class'; the first match wins; unmatched actors ignored")
    max_distance_m: float = Field(default=100.0, gt=0.0, le=10_000.0)
    occlusion_check: bool = True
    frame_id: str = "camera"

    @field_validator("classes")
    @classmethod
    def _pairs(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            pattern, sep, name = item.partition("=")
            if not sep or not pattern.strip() or not name.strip():
                raise ValueError(f"classes[{i}]: expected 'glob=class', got {item!r}")
        return value

    def class_map(self) -> dict[str, str]:
        """``{glob: class}`` in the given order."""
        return {pattern.strip(): name.strip() for pattern, _, name in (c.partition("=") for c in self.classes)}


def class_of(type_id: str, classes: dict[str, str]) -> str | None:
    """The class of a blueprint id (first matching glob), or None when unmapped."""
    return next((cls for pattern, cls in classes.items() if fnmatch.fnmatchcase(type_id, pattern)), None)


def camera_intrinsics(camera: Any) -> Any:
    """`Intrinsics` of a CARLA RGB camera actor from its ``image_size_x``, ``image_size_y`` and ``fov`` attributes."""
    from perception_safety.sim.camera import Intrinsics

    a = camera.attributes
    return Intrinsics.from_fov(int(a["image_size_x"]), int(a["image_size_y"]), float(a["fov"]))


def scene_actors(actors: Any, ego: Any, classes: dict[str, str], max_distance_m: float) -> list[tuple[Any, str, str]]:
    """``(actor, class, id)`` of the mapped vehicles and walkers within ``max_distance_m`` of the ego (not the ego)."""
    ego_loc = ego.get_transform().location
    out = []
    for actor in actors:
        if actor.id == ego.id:
            continue
        cls = class_of(actor.type_id, classes)
        if cls is None or actor.get_transform().location.distance(ego_loc) > max_distance_m:
            continue
        out.append((actor, cls, str(actor.id)))
    return out


def _find_by_role(actors: Any, role: str, what: str, keys: str) -> Any:
    from perception_safety.sim.carla_backend import CarlaBackendError

    for actor in actors:
        if actor.attributes.get("role_name") == role:
            return actor
    raise CarlaBackendError(f"no {what} with role_name {role!r} in the CARLA world ({keys})")


def make_node(name: str = NODE_NAME) -> Any:
    """Create the node: connects to CARLA (fails fast without a server) and finds the ego and its camera."""
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.ros import convert
    from perception_safety.ros.params import NodeParams
    from perception_safety.ros.qos import input_qos, output_qos
    from perception_safety.sim.carla_backend import CarlaConfig, actors_ground_truth, connect

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__(name)
            self.params = NodeParams(self, GroundTruthParams, tuple(GroundTruthParams.model_fields))
            p = self.params.config
            cfg = CarlaConfig(host=p.carla.host, port=p.carla.port, timeout_s=p.carla.timeout_s)
            self.client, self.world = connect(cfg, f"{name} parameters carla.host/port/timeout_s")
            self.pub = self.create_publisher(Detection2DArray, p.topics.ground_truth, output_qos(10))
            sub = self.create_subscription(Image, p.topics.image, self._on_image, input_qos(5), raw=True)
            self.image_topic = sub.topic_name
            self.ego = self.camera = None
            self.get_logger().info(f"ground truth for {self.image_topic} from CARLA {p.carla.host}:{p.carla.port}")

        def _find_actors(self) -> None:
            p = self.params.config
            actors = self.world.get_actors()
            self.ego = _find_by_role(actors.filter("vehicle.*"), p.role_name, "ego vehicle", "parameter role_name")
            self.camera = _find_by_role(actors.filter("sensor.camera.rgb"), p.camera_role_name, "RGB camera",
                                        "parameter camera_role_name")
            self.k = camera_intrinsics(self.camera)

        def _on_image(self, raw: bytes) -> None:
            p = self.params.config
            try:
                endian = "<" if raw[1] == 1 else ">"
                sec, nanosec = struct.unpack_from(f"{endian}iI", raw, 4)
                stamp = sec * 1_000_000_000 + nanosec
                if self.ego is None or not self.ego.is_alive or not self.camera.is_alive:
                    self._find_actors()
                actors = self.world.get_actors()
                scene = scene_actors([*actors.filter("vehicle.*"), *actors.filter("walker.*")], self.ego,
                                     p.class_map(), p.max_distance_m)
                gt = actors_ground_truth(self.world, self.k, self.camera.get_transform(), self.ego.get_transform(),
                                         scene, p.occlusion_check)
                self.pub.publish(convert.ground_truth_array_msg(gt, stamp, p.frame_id))
            except Exception as exc:  # a lost server or a vanished actor: report, keep going
                self.ego = None
                self.get_logger().error(f"ground truth skipped: {type(exc).__name__}: {exc}",
                                        throttle_duration_sec=2.0)

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``carla_ground_truth``."""
    return run_node(make_node, args)


if __name__ == "__main__":
    import sys

    sys.exit(main())
