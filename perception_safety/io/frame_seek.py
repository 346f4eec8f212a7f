"""A few frames of a bag by stamp, with their images: the evidence pass behind report thumbnails and ``frames``.

The per-bag evaluation pass never decodes images; this pass reads the bag's non-image topics (cheap), keeps the
frames whose anchor stamp is wanted, then streams the image topic once and decodes only the images whose header
stamp is wanted (within the tolerance). Cost: one image decode per wanted frame, whatever the bag's length.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import BagError, BagReadReport, BagTopics, read_frames
from perception_safety.io.bag.storage import OpenBag, open_bag
from perception_safety.io.typestore import ros2_typestore

_DECODE = {bm.IMAGE_TYPE: bm.image_from_msg, bm.COMPRESSED_IMAGE_TYPE: bm.compressed_image_from_msg}


def _header_stamp(raw: bytes | memoryview) -> int | None:
    """Header stamp from CDR bytes (the header is the first field), or None for a message too short."""
    try:
        endian = "<" if raw[1] == 1 else ">"
        sec, nanosec = struct.unpack_from(f"{endian}iI", raw, 4)
    except (struct.error, IndexError):
        return None
    return sec * 1_000_000_000 + nanosec


def images_at(bag: str | Path, topic: str | Sequence[str], stamps: Iterable[int],
              tolerance_ns: int = 0) -> dict[int, np.ndarray]:
    """Decoded images (HxWx3 RGB or HxW) of ``topic`` at the wanted stamps; a stamp without an image is absent.

    ``topic`` may be several names: each recorded one is tried in turn (one opening of the bag) until one gives
    an image, as for a camera recorded raw or through image_transport's ``/compressed``.
    """
    wanted = np.unique(np.asarray(sorted(set(int(s) for s in stamps)), dtype=np.int64))
    out: dict[int, np.ndarray] = {}
    if wanted.size == 0:
        return out
    try:
        reader = open_bag(Path(bag))
    except Exception as exc:
        raise BagError(f"{bag}: cannot open bag: {exc}") from exc
    try:
        for name in [topic] if isinstance(topic, str) else topic:
            conns = [c for c in reader.connections if c.topic == name]
            if conns:
                _decode_wanted(bag, reader, conns, wanted, tolerance_ns, out)
            if out:
                break
    finally:
        reader.close()
    return out


def _decode_wanted(bag: str | Path, reader: OpenBag, conns: list, wanted: np.ndarray, tolerance_ns: int,
                   out: dict[int, np.ndarray]) -> None:
    """Decode into ``out`` the first image of ``conns`` within the tolerance of each wanted stamp."""
    if conns[0].msgtype not in _DECODE:
        raise BagError(f"{bag}: topic {conns[0].topic} has type {conns[0].msgtype}, expected an image")
    store = ros2_typestore()
    for conn, _, raw in reader.messages(conns):
        stamp = _header_stamp(raw)
        if stamp is None:
            continue
        k = int(np.searchsorted(wanted, stamp))
        near = [j for j in (k - 1, k) if 0 <= j < wanted.size and abs(int(wanted[j]) - stamp) <= tolerance_ns]
        if not near:
            continue
        target = int(wanted[min(near, key=lambda j: abs(int(wanted[j]) - stamp))])
        if target in out:
            continue
        try:
            out[target] = _DECODE[conn.msgtype](store.deserialize_cdr(memoryview(raw), conn.msgtype))
        except Exception:  # a corrupt image: the frame is shown without a picture
            continue
        if len(out) == wanted.size:
            break


def frames_at(bag: str | Path, stamps: Iterable[int], topics: BagTopics | None = None, tolerance_ns: int = 0,
              image_topic: str | None = None) -> dict[int, Frame]:
    """The frames of ``bag`` at the wanted anchor stamps, each with its image when the bag has one."""
    topics = topics or BagTopics()
    wanted = {int(s) for s in stamps}
    frames = {f.stamp_ns: f for f in read_frames(bag, topics, tolerance_ns, with_images=False, report=BagReadReport())
              if f.stamp_ns in wanted}
    names = [image_topic] if image_topic is not None else [topics.image, topics.image + "/compressed"]
    images = images_at(bag, names, frames, tolerance_ns)
    return {s: replace(f, image=images.get(s)) for s, f in frames.items()}
