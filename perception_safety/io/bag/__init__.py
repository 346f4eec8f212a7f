"""rosbag2 bags (sqlite3 or mcap) to and from `Frame`s, with rosbags (no ROS install needed).

``layout`` (topics, types, storage, camera model, errors), ``reading`` (frames assembled around an anchor topic,
bad messages skipped and reported), ``writing`` (frames recorded as a new bag).
"""

from perception_safety.io.bag.layout import (
    COMPRESSED_SUFFIX,
    BagConfig,
    BagError,
    BagTopics,
    CameraInfoSpec,
    find_bags,
)
from perception_safety.io.bag.reading import (
    BagReadReport,
    SkippedMessage,
    StatusRecords,
    read_bags,
    read_frames,
    read_monitor_results,
)
from perception_safety.io.bag.writing import write_frames

__all__ = [
    "COMPRESSED_SUFFIX",
    "BagConfig",
    "BagError",
    "BagReadReport",
    "BagTopics",
    "CameraInfoSpec",
    "SkippedMessage",
    "StatusRecords",
    "find_bags",
    "read_bags",
    "read_frames",
    "read_monitor_results",
    "write_frames",
]
