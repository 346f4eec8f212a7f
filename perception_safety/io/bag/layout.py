"""What a recording looks like on disk: its topics and their message types, the stamp tolerance and storage,
the camera model it carries, the error every bag function raises (naming bag and topic), and where bags are
found below the paths a user names."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from rosbags.rosbag2 import StoragePlugin

from perception_safety.errors import PerceptionSafetyError
from perception_safety.io import bag_messages as bm


class BagError(PerceptionSafetyError):
    """A bag cannot be opened or lacks what the read needs (names bag and topic)."""


class BagTopics(BaseModel):
    """Topic names of a recording; an empty name means the topic is not recorded/read."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    image: str = "/camera/image_raw"
    """sensor_msgs/Image; CompressedImage is written to and read from ``<image>/compressed``."""
    camera_info: str = "/camera/camera_info"
    """sensor_msgs/CameraInfo per image (size and intrinsics; an image of another size is skipped on read)."""
    detections: str = "/detections"
    candidates: str = "/detections/candidates"
    """The detector's boxes below its score threshold (same type as detections; read by PCD only, optional)."""
    ground_truth: str = "/ground_truth"
    ego: str = "/ego/odometry"
    monitor_results: str = "/perception_safety/monitor_results"
    """diagnostic_msgs/DiagnosticArray, one status per monitor and frame (written when results are given)."""
    anchor: Literal["detections", "image", "ground_truth"] = "detections"


class BagConfig(BaseModel):
    """How recordings are read and written: topics, stamp tolerance and storage (section ``bags``)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    topics: BagTopics = BagTopics()
    tolerance_ms: float = Field(0.0, ge=0.0, description="join messages whose stamps differ by at most this")
    storage: Literal["mcap", "sqlite3"] = "mcap"

    @property
    def tolerance_ns(self) -> int:
        return round(self.tolerance_ms * 1e6)


TOPIC_TYPES = {
    "image": bm.IMAGE_TYPE,
    "camera_info": bm.CAMERA_INFO_TYPE,
    "detections": bm.DETECTIONS_TYPE,
    "candidates": bm.DETECTIONS_TYPE,
    "ground_truth": bm.DETECTIONS_TYPE,
    "ego": bm.ODOMETRY_TYPE,
}
"""Message type of each topic role (images: raw here; CompressedImage on ``<image>/compressed``)."""
COMPRESSED_SUFFIX = "/compressed"


@dataclass(frozen=True)
class CameraInfoSpec:
    """What a recording's sensor_msgs/CameraInfo carries: ``size = (width, height)``, ``k = (fx, fy, cx, cy)``."""

    size: tuple[int, int]
    k: tuple[float, float, float, float]


def storage_plugin(storage: str) -> StoragePlugin:
    """The rosbags storage plugin of a ``bags.storage`` value."""
    try:
        return {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    except KeyError:
        raise BagError(f"unknown bag storage {storage!r} (expected 'mcap' or 'sqlite3')") from None


def find_bags(inputs: Iterable[str | Path]) -> list[Path]:
    """Bag directories named or found below the given paths (a bag directory holds metadata.yaml)."""
    found: list[Path] = []
    for item in inputs:
        p = Path(item)
        if (p / "metadata.yaml").is_file():
            found.append(p)
        elif p.is_file() and p.name == "metadata.yaml":
            found.append(p.parent)
        elif p.is_dir():
            found.extend(sorted(m.parent for m in p.rglob("metadata.yaml")))
        elif p.is_file() and p.suffix in (".mcap", ".db3") and (p.parent / "metadata.yaml").is_file():
            found.append(p.parent)
        else:
            raise BagError(f"{p}: not a rosbag2 bag directory (no metadata.yaml) or a directory containing bags")
    unique = list(dict.fromkeys(found))
    return unique
