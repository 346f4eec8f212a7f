"""A rosbags type store for ROS 2 with the bundled vision_msgs 2D definitions registered.

The .msg files in ``io/msg/vision_msgs`` are field for field vision_msgs 4.x; the RIHS01
hashes rosbags computes from them equal those of a real vision_msgs build.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

MSG_DIR = Path(__file__).parent / "msg" / "vision_msgs"


def register_vision_msgs(store: Typestore) -> Typestore:
    """Add the vision_msgs 2D types (Detection2DArray, ...) to a rosbags ``store``; returns it.

    The public way to write or read bags with these types from your own rosbags code.
    """
    types = {}
    for path in sorted(MSG_DIR.glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"vision_msgs/msg/{path.stem}"))
    store.register(types)
    return store


@cache
def ros2_typestore() -> Typestore:
    """ROS 2 (Kilted) message types plus vision_msgs; built once per process."""
    return register_vision_msgs(get_typestore(Stores.ROS2_KILTED))
