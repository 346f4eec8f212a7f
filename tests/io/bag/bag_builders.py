"""Small bags written in code with rosbags' Writer (the reference writer) for the storage and decoder tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import CompressionMode, Reader, StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat

from perception_safety.core import Box, Detection, EgoState, GroundTruthObject
from perception_safety.io import bag_messages as bm
from perception_safety.io.typestore import ros2_typestore

RELIABLE = Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE, QosTime(0, 0),
               QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)


def write_bag(path: Path, messages: Sequence[tuple[str, str, int, Any]], storage: str = "mcap",
              compression: CompressionMode = CompressionMode.NONE, qos: Sequence[Qos] = ()) -> Path:
    """A bag of ``(topic, msgtype, log time, message object or CDR bytes)`` in the given order."""
    store = ros2_typestore()
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    writer = Writer(path, version=9, storage_plugin=plugin)
    if compression != CompressionMode.NONE:
        writer.set_compression(compression, CompressionFormat.ZSTD)
    with writer:
        conns: dict[tuple[str, str], Any] = {}
        for topic, msgtype, stamp, msg in messages:
            key = (topic, msgtype)
            if key not in conns:
                conns[key] = writer.add_connection(topic, msgtype, typestore=store, offered_qos_profiles=qos)
            raw = msg if isinstance(msg, bytes | bytearray) else store.serialize_cdr(msg, msgtype)
            writer.write(conns[key], stamp, raw)
    return path


def reference(path: Path, keep=lambda c: True) -> list[tuple[int, str, str, int, bytes]]:
    """What rosbags' Reader yields: ``(connection id, topic, type, log time, bytes)``."""
    with Reader(path) as r:
        conns = [c for c in r.connections if keep(c)]
        return [(c.id, c.topic, c.msgtype, t, bytes(d)) for c, t, d in r.messages(connections=conns)]


def random_messages(n: int, seed: int = 0, image_bytes: int = 0) -> list[tuple[str, str, int, Any]]:
    """``n`` frames' worth of detections, ground truth, odometry (and raw images of ``image_bytes`` each),
    stamps out of order and with repeats (the readers' sort and tie rules are exercised)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        stamp = int(1_000_000_000 + rng.integers(0, n // 2 + 1) * 10_000_000)
        dets = tuple(Detection(Box(*_box(rng)), "car", float(rng.uniform())) for _ in range(rng.integers(0, 4)))
        gts = tuple(GroundTruthObject.at_position(Box(*_box(rng)), "ped", tuple(rng.uniform(-9, 9, 3)), f"t{k}")
                    for k in range(rng.integers(0, 3)))
        out.append(("/detections", bm.DETECTIONS_TYPE, stamp, bm.detections_to_msg(dets, stamp)))
        out.append(("/ground_truth", bm.DETECTIONS_TYPE, stamp, bm.ground_truth_to_msg(gts, stamp)))
        out.append(("/ego/odometry", bm.ODOMETRY_TYPE, stamp, bm.ego_to_msg(EgoState(1.0, 2.0, 0.5, 3.0), stamp)))
        if image_bytes:
            img = rng.integers(0, 256, (1, image_bytes), dtype=np.uint8)  # one mono row: bulk between records
            out.append(("/camera/image_raw", bm.IMAGE_TYPE, stamp, bm.image_to_msg(img, stamp)))
    return out


def _box(rng: np.random.Generator) -> tuple[float, float, float, float]:
    x, y = rng.uniform(0, 600, 2)
    w, h = rng.uniform(1, 80, 2)
    return x, y, x + w, y + h
