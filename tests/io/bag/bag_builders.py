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


def recompress_mcap(path: Path, name: str, compress, decompress) -> None:
    """Rewrite an MCAP file written by rosbags with every chunk compressed as ``name`` (``compress``); the old chunks
    are read back with ``decompress`` (identity for uncompressed ones). Chunk indexes and the footer follow the new
    offsets; summary offset records are dropped (the footer then says there are none)."""
    import struct

    data = path.read_bytes()
    summary_start = struct.unpack_from("<Q", data, len(data) - 8 - 20)[0]

    def records(pos: int, stop: int):
        while pos < stop:
            op, length = struct.unpack_from("<BQ", data, pos)
            yield pos, op, data[pos + 9 : pos + 9 + length]
            pos += 9 + length

    def string(body: bytes, pos: int) -> tuple[bytes, int]:
        n = struct.unpack_from("<I", body, pos)[0]
        return body[pos + 4 : pos + 4 + n], pos + 4 + n

    moved: dict[int, int] = {}
    out = bytearray(data[:8])
    for pos, op, body in records(8, summary_start):
        moved[pos] = len(out)
        if op == 0x06:
            head = body[:28]
            _, at = string(body, 28)
            raw = decompress(body[at + 8 :])
            packed = compress(raw)
            body = head + struct.pack("<I", len(name)) + name.encode() + struct.pack("<Q", len(packed)) + packed
        if op == 0x0F:
            body = struct.pack("<I", 0)
        out += struct.pack("<BQ", op, len(body)) + body
    new_summary = len(out)
    for _, op, body in records(summary_start, len(data) - 8 - 29):
        if op == 0x0E:
            continue
        if op == 0x08:
            start, end, offset, _ = struct.unpack_from("<QQQQ", body)
            n = struct.unpack_from("<I", body, 32)[0]
            table = [struct.unpack_from("<HQ", body, 36 + k) for k in range(0, n, 10)]
            index_length = struct.unpack_from("<Q", body, 36 + n)[0]
            _, at = string(body, 44 + n)
            size = struct.unpack_from("<Q", body, at + 8)[0]
            chunk_len = struct.unpack_from("<Q", out, moved[offset] + 1)[0] + 9
            packed_len = chunk_len - 9 - 40 - len(name)
            body = (struct.pack("<QQQQI", start, end, moved[offset], chunk_len, n)
                    + b"".join(struct.pack("<HQ", ch, moved[off]) for ch, off in table)
                    + struct.pack("<QI", index_length, len(name)) + name.encode()
                    + struct.pack("<QQ", packed_len, size))
        out += struct.pack("<BQ", op, len(body)) + body
    out += struct.pack("<BQQQI", 0x02, 20, new_summary, 0, 0) + data[-8:]
    path.write_bytes(bytes(out))
