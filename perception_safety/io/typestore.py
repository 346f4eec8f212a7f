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


@cache
def ros2_typestore() -> Typestore:
    """ROS 2 (Kilted) message types plus vision_msgs; built once per process."""
    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for path in sorted(MSG_DIR.glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"vision_msgs/msg/{path.stem}"))
    store.register(types)
    return store
