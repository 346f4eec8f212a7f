"""A rosbags type store for ROS 2 with the bundled vision_msgs (2D and 3D) and Autoware object-list definitions.

The .msg files in ``io/msg/vision_msgs`` are field for field vision_msgs 4.x (the RIHS01 hashes rosbags computes
from the 2D subset equal those of a real vision_msgs build, tested); ``io/msg/autoware_perception_msgs`` holds
Autoware's ``DetectedObjects`` and the types it uses, field for field.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

MSG_DIR = Path(__file__).parent / "msg" / "vision_msgs"
AUTOWARE_MSG_DIR = Path(__file__).parent / "msg" / "autoware_perception_msgs"


def _register(store: Typestore, folder: Path, package: str) -> Typestore:
    types = {}
    for path in sorted(folder.glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"{package}/msg/{path.stem}"))
    store.register(types)
    return store


def register_vision_msgs(store: Typestore) -> Typestore:
    """Add the vision_msgs types (Detection2DArray, Detection3DArray, ...) to a rosbags ``store``; returns it.

    The public way to write or read bags with these types from your own rosbags code.
    """
    return _register(store, MSG_DIR, "vision_msgs")


def register_autoware_perception_msgs(store: Typestore) -> Typestore:
    """Add Autoware's ``autoware_perception_msgs/DetectedObjects`` (and the types it uses) to ``store``."""
    return _register(store, AUTOWARE_MSG_DIR, "autoware_perception_msgs")


@cache
def ros2_typestore() -> Typestore:
    """ROS 2 (Kilted) message types plus vision_msgs and Autoware's object lists; built once per process."""
    return register_autoware_perception_msgs(register_vision_msgs(get_typestore(Stores.ROS2_KILTED)))
