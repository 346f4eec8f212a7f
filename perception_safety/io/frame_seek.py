"""A few frames of a bag by stamp, with their images: the evidence pass behind report thumbnails and ``frames``.

The per-bag evaluation pass never decodes images. With each frame's recording window (the first and last log time
of its messages, which `read_frames` collects in that pass) `frames_in_windows` seeks: it reads only the messages
logged inside each window (only the file's chunks of that time are read) and decodes the frame's image. Without the
windows (results of an older version) `frames_at` reads the bag's non-image topics, keeps the frames whose anchor
stamp is wanted, then streams the image topic once and decodes only the images whose header stamp is wanted
(within the tolerance). Either way: one image decode per wanted frame.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from perception_safety.core.types import Frame, InvalidValueError
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import BagError, BagReadReport, BagTopics, read_frames
from perception_safety.io.bag.reading import _read_open, open_readable
from perception_safety.io.bag.storage import OpenBag
from perception_safety.io.image_codec import jpeg_size
from perception_safety.io.typestore import ros2_typestore

_DECODE = {bm.IMAGE_TYPE: bm.image_from_msg, bm.COMPRESSED_IMAGE_TYPE: bm.compressed_image_from_msg}
Coarse = Callable[[int, tuple[int, int]], float]
"""(stamp, (width, height)) -> how many times smaller the frame's picture will be shown (`frames_in_windows`)."""


def _header_stamp(raw: bytes | memoryview) -> int | None:
    """Header stamp from CDR bytes (the header is the first field), or None for a message too short."""
    try:
        endian = "<" if raw[1] == 1 else ">"
        sec, nanosec = struct.unpack_from(f"{endian}iI", raw, 4)
    except (struct.error, IndexError):
        return None
    return sec * 1_000_000_000 + nanosec


def images_at(bag: str | Path, topic: str | Sequence[str], stamps: Iterable[int],
              tolerance_ns: int = 0, coarse: Coarse | None = None) -> dict[int, np.ndarray]:
    """Decoded images (HxWx3 RGB or HxW) of ``topic`` at the wanted stamps; a stamp without an image is absent.

    ``topic`` may be several names: each recorded one is tried in turn (one opening of the bag) until one gives
    an image, as for a camera recorded raw or through image_transport's ``/compressed``. ``coarse``: see
    `frames_in_windows`.
    """
    wanted = np.unique(np.asarray(sorted(set(int(s) for s in stamps)), dtype=np.int64))
    out: dict[int, np.ndarray] = {}
    if wanted.size == 0:
        return out
    reader = open_readable(bag)
    try:
        for name in [topic] if isinstance(topic, str) else topic:
            conns = [c for c in reader.connections if c.topic == name]
            if conns:
                _decode_wanted(bag, reader, conns, wanted, tolerance_ns, out, coarse)
            if out:
                break
    finally:
        reader.close()
    return out


def _decode_wanted(bag: str | Path, reader: OpenBag | _Window, conns: list, wanted: np.ndarray, tolerance_ns: int,
                   out: dict[int, np.ndarray], coarse: Coarse | None = None) -> None:
    """Decode into ``out`` the first image of ``conns`` within the tolerance of each wanted stamp (``coarse``: see
    `frames_in_windows`)."""
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
            msg = store.deserialize_cdr(memoryview(raw), conn.msgtype)
            image = _coarse_jpeg(msg, target, coarse) if coarse is not None else None
            out[target] = image if image is not None else _DECODE[conn.msgtype](msg)
        except Exception:  # a corrupt image: the frame is shown without a picture
            continue
        if len(out) == wanted.size:
            break


def _image_topics(topics: BagTopics, image_topic: str | None) -> list[str]:
    """The image topic asked for, else the configured one and its image_transport ``/compressed`` twin, in turn."""
    return [image_topic] if image_topic is not None else [topics.image, topics.image + "/compressed"]


def frames_at(bag: str | Path, stamps: Iterable[int], topics: BagTopics | None = None, tolerance_ns: int = 0,
              image_topic: str | None = None, coarse: Coarse | None = None) -> dict[int, Frame]:
    """The frames of ``bag`` at the wanted anchor stamps, each with its image when the bag has one (``coarse``:
    see `frames_in_windows`)."""
    topics = topics or BagTopics()
    wanted = {int(s) for s in stamps}
    frames = {f.stamp_ns: f for f in read_frames(bag, topics, tolerance_ns, with_images=False, report=BagReadReport())
              if f.stamp_ns in wanted}
    names = _image_topics(topics, image_topic)
    images = images_at(bag, names, frames, tolerance_ns, coarse)
    return {s: replace(f, image=images.get(s)) for s, f in frames.items()}


IMAGE_SEARCH_NS = (0, 1_000_000_000)
"""Margins around a frame's window searched in turn for its image (not in the window when the camera's message was
logged before or after all of the frame's other messages); then the whole image topic."""


class _Window:
    """An open reader seen through log-time windows ``[start, stop)`` (disjoint, in order): what `_read_open`
    reads of it."""

    def __init__(self, reader: OpenBag, spans: Sequence[tuple[int, int]]) -> None:
        self.reader, self.spans = reader, spans

    @property
    def connections(self) -> list:
        return self.reader.connections

    def messages(self, connections: Sequence) -> Iterator[tuple[Any, int, bytes]]:
        for start, stop in self.spans:
            yield from self.reader.messages(connections, start, stop)


def _spans(windows: Iterable[Sequence[int]]) -> list[tuple[int, int]]:
    """The recording windows ``(first, last)`` as disjoint ``[start, stop)`` log-time spans, in order."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((int(lo), int(hi) + 1) for lo, hi in windows):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def frames_in_windows(bag: str | Path, windows: Mapping[int, Sequence[int]], topics: BagTopics | None = None,
                      tolerance_ns: int = 0, image_topic: str | None = None, coarse: Coarse | None = None
                      ) -> dict[int, Frame]:
    """The frames of ``bag`` at the wanted anchor stamps (``windows``: stamp -> recording window ``(first, last)``
    log time), each with its image when the bag has one, reading only the messages logged in the windows.

    The frame is the one `read_frames` assembles: its messages are all in its window, and the nearest of all is the
    nearest of those in any of the windows, so all the windows are read in one pass (`_read_open` once per bag,
    tested equal to the whole bag's frames). Its image is the first image message with the frame's stamp (within
    the tolerance) in its window, else in the window widened by `IMAGE_SEARCH_NS`, else anywhere on the topic.
    With ``coarse`` (stamp, (width, height) -> how much smaller the picture will be shown) a JPEG image is decoded
    at 1/2, 1/4 or 1/8 of its size, the coarsest not beyond that (libjpeg scales while decoding), so the frame's
    image is smaller than its boxes' pixel grid by the ratio of the shapes (`report.overlay` ``full_size``), and
    always in colour, straight to RGB (`_coarse_jpeg`).
    """
    topics = topics or BagTopics()
    names = _image_topics(topics, image_topic)
    reader = open_readable(bag)
    out: dict[int, Frame] = {}
    try:
        conns = next(([c for c in reader.connections if c.topic == n] for n in names
                      if any(c.topic == n for c in reader.connections)), [])
        view = _Window(reader, _spans(windows.values()))
        found = {f.stamp_ns: f for f in _read_open(view, str(bag), topics, tolerance_ns, False, BagReadReport())
                 if f.stamp_ns in windows}  # the last frame of a stamp, as read_frames noted its window
        for stamp, (lo, hi) in sorted(windows.items(), key=lambda kv: tuple(kv[1])):
            if stamp in found:
                out[stamp] = replace(found[stamp], image=_image_near(bag, reader, conns, stamp, int(lo), int(hi),
                                                                     tolerance_ns, coarse))
    finally:
        reader.close()
    return out


def _image_near(bag: str | Path, reader: OpenBag, conns: list, stamp: int, lo: int, hi: int,
                tolerance_ns: int, coarse: Coarse | None = None) -> np.ndarray | None:
    """The image of the frame at ``stamp`` logged nearest its window ``[lo, hi]`` (`frames_in_windows`)."""
    if not conns:
        return None
    wanted = np.asarray([stamp], dtype=np.int64)
    for margin in IMAGE_SEARCH_NS:
        got: dict[int, np.ndarray] = {}
        _decode_wanted(bag, _Window(reader, [(lo - margin, hi + margin + 1)]), conns, wanted, tolerance_ns, got,
                       coarse)
        if got:
            return got[stamp]
    got = {}
    _decode_wanted(bag, reader, conns, wanted, tolerance_ns, got, coarse)
    return got.get(stamp)


_REDUCED = {f: (flag & ~cv2.IMREAD_COLOR_BGR) | cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION for f, flag in (
    (1, cv2.IMREAD_COLOR_BGR), (2, cv2.IMREAD_REDUCED_COLOR_2), (4, cv2.IMREAD_REDUCED_COLOR_4),
    (8, cv2.IMREAD_REDUCED_COLOR_8))}
"""Scale -> OpenCV flag decoding a JPEG at that scale in colour, libjpeg writing RGB (no BGR image converted), the
stored pixel grid kept (no EXIF rotation: boxes are in that grid, as `image_codec.decode` keeps it)."""


def _coarse_jpeg(msg: Any, stamp: int, coarse: Coarse) -> np.ndarray | None:
    """A CompressedImage's JPEG decoded at 1/factor, RGB (the largest of 1, 2, 4, 8 not above ``coarse(stamp,
    size)``; a grey JPEG too comes out as three equal channels, as the overlay draws it); None when it is not a
    JPEG (the caller decodes it)."""
    data = getattr(msg, "data", None)
    if data is None:
        return None
    try:
        size = jpeg_size(data)  # refuses what is not a JPEG (no SOI marker) too
    except InvalidValueError:
        return None  # the full decoder judges it
    shown_smaller = coarse(stamp, size)
    factor = max((f for f in _REDUCED if f <= shown_smaller), default=1)
    small = cv2.imdecode(np.frombuffer(data, np.uint8), _REDUCED[factor])
    if small is None:
        raise InvalidValueError("compressed image: cannot decode")
    return small
