"""``online --record DIR``: every topic the started nodes publish (verdicts, stop requests, diagnostics, overlay
markers) written as they go out into a new MCAP rosbag2 in DIR, so a session can be replayed and viewed later.

The recorder subscribes raw (no deserialization) and writes the CDR bytes with their receive time; the connection
types come from the publishers themselves. DIR must not exist (a bag is never written into an existing folder,
least of all an input bag); the drawn overlay image is left out unless asked for (it is large; the markers carry
the same content).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError

SKIP = ("/rosout", "/parameter_events")


class RecordError(PerceptionSafetyError):
    """The recording folder cannot be used."""


def check_record_dir(path: str | Path) -> Path:
    """``path`` as the new bag folder: it must not exist yet and must not lie inside a rosbag2 bag."""
    p = Path(path)
    if p.exists():
        raise RecordError(f"--record {p}: exists; give a new folder (a recording never goes into an existing one, "
                          "least of all an input bag)")
    for parent in p.resolve().parents:
        if (parent / "metadata.yaml").is_file():
            raise RecordError(f"--record {p}: inside the rosbag2 bag {parent}; give a folder outside any bag")
    return p


def _type_name(msg_type: Any) -> str:
    """``pkg/msg/Name`` of a generated ROS message class."""
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


def make_recorder(nodes: Sequence[Any], out: Path, with_images: bool = False) -> Any:
    """A node recording every topic ``nodes`` publish (see the module docstring) into the new bag ``out``."""
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosbags.rosbag2 import StoragePlugin, Writer

    from perception_safety.io.typestore import ros2_typestore

    class Recorder(Node):
        def __init__(self) -> None:
            super().__init__("online_recorder")
            self.lock = threading.Lock()
            self.store = ros2_typestore()
            self.writer = Writer(out, version=8, storage_plugin=StoragePlugin.MCAP)
            self.writer.open()
            self.conns: dict[str, Any] = {}
            self.count = 0
            qos = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
            for node in nodes:
                for pub in node.publishers:
                    topic, msg_type = pub.topic_name, pub.msg_type
                    if topic in SKIP or topic in self.conns or (not with_images and _type_name(msg_type) in (
                            "sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage")):
                        continue
                    self.conns[topic] = self.writer.add_connection(topic, _type_name(msg_type), typestore=self.store)
                    self.create_subscription(msg_type, topic, lambda raw, t=topic: self._write(t, raw), qos, raw=True)
            self.get_logger().info(f"recording {', '.join(sorted(self.conns))} into {out}")

        def _write(self, topic: str, raw: bytes) -> None:
            with self.lock:
                if self.writer is not None:
                    self.writer.write(self.conns[topic], self.get_clock().now().nanoseconds, bytes(raw))
                    self.count += 1

        def destroy_node(self) -> None:
            with self.lock:
                if self.writer is not None:
                    self.writer.close()  # writes the MCAP footer and metadata.yaml: the bag is complete
                    self.writer = None
            super().destroy_node()

    return Recorder()
