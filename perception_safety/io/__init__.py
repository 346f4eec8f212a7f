"""Input/output: rosbag2 bags (rosbags), datasets, episode logs, config files. Science layers never import it.

Public helpers for your own data (imported lazily, so ``import perception_safety.io`` stays cheap):
``ros2_typestore()`` / ``register_vision_msgs(store)`` (rosbags type store with vision_msgs registered),
``write_frames`` / ``read_frames`` / ``BagTopics`` (bags in the layout the evaluator reads), and
``read_jsonl_frames`` / ``write_jsonl_frames`` (the JSON Lines dataset).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_PUBLIC = {
    "ros2_typestore": "perception_safety.io.typestore",
    "register_vision_msgs": "perception_safety.io.typestore",
    "write_frames": "perception_safety.io.bag",
    "read_frames": "perception_safety.io.bag",
    "BagTopics": "perception_safety.io.bag",
    "read_jsonl_frames": "perception_safety.io.dataset",
    "write_jsonl_frames": "perception_safety.io.dataset",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'perception_safety.io' has no attribute {name!r}")
