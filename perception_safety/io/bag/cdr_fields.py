"""Field-selective CDR readers for the message types `evaluate` reads from every bag (vision_msgs Detection2DArray,
nav_msgs Odometry, diagnostic_msgs DiagnosticArray): only the values the frames need are unpacked (covariances
and other unused numbers are bounds-checked and skipped), into plain tuples.

Each reader accepts exactly the bytes rosbags' ``deserialize_cdr`` accepts and reads the same values (XCDR1,
little- or big-endian, alignment relative to the payload after the 4-byte encapsulation header; every string,
used or not, checked for its length, terminator and UTF-8 as rosbags checks it; at most 3 bytes of padding after
the message). Anything else raises `CdrMismatch`: the caller then deserialises the message with rosbags, whose
result or error is the reference.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Any


class CdrMismatch(Exception):  # noqa: N818 - a hand-over to rosbags, not a user-facing error
    """The bytes are not read here (malformed, truncated, or a layout rosbags may read otherwise)."""


class _Order:
    """The struct readers of one byte order."""

    def __init__(self, prefix: str) -> None:
        self.u32 = struct.Struct(prefix + "I").unpack_from
        self.stamp = struct.Struct(prefix + "iI").unpack_from
        self.f64x4 = struct.Struct(prefix + "4d").unpack_from  # score + position
        self.f64x5 = struct.Struct(prefix + "5d").unpack_from  # BoundingBox2D
        self.f64x7 = struct.Struct(prefix + "7d").unpack_from  # Pose
        self.f64 = struct.Struct(prefix + "d").unpack_from


_LITTLE, _BIG = _Order("<"), _Order(">")
_U32 = next(code for code in "IL" if array(code).itemsize == 4)
"""The native typecode of an unsigned 32-bit word (for `_words`)."""


def _words(raw: bytes, o: _Order) -> Any:
    """The message as unsigned 32-bit words in its byte order: ``words[p >> 2]`` is the u32 at an aligned position
    ``p`` (the payload starts at 4, so payload alignment is absolute alignment), an `IndexError` past the last whole
    word exactly where ``unpack_from`` fails. A word read costs an index, not a struct call and a tuple."""
    whole = memoryview(raw)[: len(raw) & ~3]
    if o is _LITTLE and sys.byteorder == "little":
        return whole.cast(_U32)
    words = array(_U32)
    words.frombytes(whole)
    if (o is _LITTLE) != (sys.byteorder == "little"):
        words.byteswap()
    return words


def _order(raw: bytes) -> _Order:
    if len(raw) < 4 or raw[0] != 0 or raw[1] > 1:
        raise CdrMismatch("encapsulation")
    return _LITTLE if raw[1] else _BIG


def _string(raw: bytes, p: int, o: _Order) -> tuple[str, int]:
    """The string at ``p`` (aligned here to 4) and the position after it."""
    p += -p & 3  # payload offset 4: alignment relative to the payload is alignment of the absolute position
    try:
        size = o.u32(raw, p)[0]
    except struct.error:
        raise CdrMismatch("truncated") from None
    end = p + 4 + size
    if size < 1 or end > len(raw) or raw[end - 1] != 0:
        raise CdrMismatch("string")
    try:
        return raw[p + 4 : end - 1].decode(), end
    except UnicodeDecodeError:
        raise CdrMismatch("string") from None


def _count(raw: bytes, p: int, o: _Order, minimum: int) -> tuple[int, int]:
    """A sequence's element count at ``p`` (aligned to 4) and the position after it (rosbags' bound on counts)."""
    p += -p & 3
    try:
        n = o.u32(raw, p)[0]
    except struct.error:
        raise CdrMismatch("truncated") from None
    p += 4
    if p + n * minimum > len(raw):
        raise CdrMismatch("count")
    return n, p


def _align8(p: int) -> int:
    return p + (-(p - 4) & 7)


def _header(raw: bytes, o: _Order) -> tuple[int, int]:
    """Stamp (ns) of the std_msgs/Header that opens the message, and the position after its frame id."""
    try:
        sec, nanosec = o.stamp(raw, 4)
    except struct.error:
        raise CdrMismatch("truncated") from None
    _, p = _string(raw, 12, o)
    return sec * 1_000_000_000 + nanosec, p


def _end(raw: bytes, p: int) -> None:
    if p > len(raw) or p + 3 < len(raw):
        raise CdrMismatch("size")


def detection2d_array(raw: bytes) -> tuple[int, list[tuple[Any, ...]]]:
    """``(stamp_ns, [(first result (class_id, score) or None, position (x, y, z) or None, box (cx, cy, sx, sy),
    id)])`` of a vision_msgs/Detection2DArray (strings read inline: `_string`'s checks, without a call each)."""
    o = _order(raw)
    stamp, p = _header(raw, o)
    n, p = _count(raw, p, o, 1)
    u32, f64x4, f64x5, size = o.u32, o.f64x4, o.f64x5, len(raw)
    out = []
    try:
        for _ in range(n):
            p += (-p & 3) + 8  # the detection's header: its stamp (unused; the bytes after it prove it there)
            end = p + 4 + u32(raw, p)[0]
            if end <= p + 4 or end > size or raw[end - 1]:
                raise CdrMismatch("string")
            raw[p + 4 : end - 1].decode()  # frame_id: unused, checked as rosbags checks it
            p = end + (-end & 3)
            results = u32(raw, p)[0]
            p += 4
            if p + results > size:
                raise CdrMismatch("count")
            first = position = None
            for k in range(results):  # the doubles a result skips are proved there by the reads after them
                p += -p & 3
                end = p + 4 + u32(raw, p)[0]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                class_id = raw[p + 4 : end - 1].decode()
                p = end + (-(end - 4) & 7)
                if k == 0:
                    score, px, py, pz = f64x4(raw, p)
                    first, position = (class_id, score), (px, py, pz)
                p += 64 + 288  # score, pose, covariance (36 doubles)
            p += -(p - 4) & 7
            cx, cy, _, sx, sy = f64x5(raw, p)
            p += 40
            end = p + 4 + u32(raw, p)[0]
            if end <= p + 4 or end > size or raw[end - 1]:
                raise CdrMismatch("string")
            out.append((first, position, (cx, cy, sx, sy), raw[p + 4 : end - 1].decode()))
            p = end
    except (struct.error, IndexError, UnicodeDecodeError):
        raise CdrMismatch("truncated or invalid") from None
    _end(raw, p)
    return stamp, out


def odometry(raw: bytes) -> tuple[int, tuple[float, ...]]:
    """``(stamp_ns, (x, y, qx, qy, qz, qw, forward speed))`` of a nav_msgs/Odometry."""
    o = _order(raw)
    stamp, p = _header(raw, o)
    _, p = _string(raw, p, o)  # child_frame_id
    p = _align8(p)
    try:
        x, y, _, qx, qy, qz, qw = o.f64x7(raw, p)
        speed = o.f64(raw, p + 56 + 288)[0]  # twist.twist.linear.x after the pose covariance
    except struct.error:
        raise CdrMismatch("truncated") from None
    _end(raw, p + 56 + 288 + 48 + 288)
    return stamp, (x, y, qx, qy, qz, qw, speed)


def diagnostic_array(raw: bytes) -> tuple[int, list[tuple[int, str, str, list[tuple[str, str]]]]]:
    """``(stamp_ns, [(level, name, message, [(key, value)])])`` of a diagnostic_msgs/DiagnosticArray (its many
    short strings read inline: `_string`'s checks, without a call per string)."""
    o = _order(raw)
    stamp, p = _header(raw, o)
    n, p = _count(raw, p, o, 1)
    u32, size = o.u32, len(raw)
    out = []
    try:
        for _ in range(n):
            level = raw[p] - 256 if raw[p] > 127 else raw[p]  # rosbags reads a byte as a signed int
            p += 1
            texts = []
            for _ in range(3):  # name, message, hardware_id
                p += -p & 3
                end = p + 4 + u32(raw, p)[0]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                texts.append(raw[p + 4 : end - 1].decode())
                p = end
            count, p = _count(raw, p, o, 1)
            pairs = []
            for _ in range(count):
                p += -p & 3
                end = p + 4 + u32(raw, p)[0]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                key = raw[p + 4 : end - 1].decode()
                p = end + (-end & 3)
                end = p + 4 + u32(raw, p)[0]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                pairs.append((key, raw[p + 4 : end - 1].decode()))
                p = end
            out.append((level, texts[0], texts[1], pairs))
    except (struct.error, IndexError, UnicodeDecodeError):
        raise CdrMismatch("truncated or invalid") from None
    _end(raw, p)
    return stamp, out


def diagnostic_alarm(raw: bytes, name: bytes) -> tuple[int, bool | None, tuple[str, int] | None]:
    """``(stamp_ns, alarm, bad level)`` of a diagnostic_msgs/DiagnosticArray for the verdict pass: the ``alarm`` of
    its last status named ``name`` (UTF-8; ``None`` when none is; the last ``alarm`` key of that status, ``true`` or
    not, as `bag_messages.result_from_fields` reads it) and ``(status name, level)`` of the first status whose level
    is not 0-3, else ``None``. Every byte is checked as `diagnostic_array` checks it; strings are decoded only where a
    value is needed or the bytes after the header are not all ASCII (ASCII bytes are valid UTF-8)."""
    o = _order(raw)
    stamp, p = _header(raw, o)
    n, p = _count(raw, p, o, 1)
    words, size, ascii_only = _words(raw, o), len(raw), raw[p:].isascii()
    alarm, bad, wanted = None, None, len(name)
    try:
        for _ in range(n):
            level = raw[p] - 256 if raw[p] > 127 else raw[p]
            p += 1
            p += -p & 3  # name
            end = p + 4 + words[p >> 2]
            if end <= p + 4 or end > size or raw[end - 1]:
                raise CdrMismatch("string")
            if not ascii_only:
                raw[p + 4 : end - 1].decode()
            named = end - p - 5 == wanted and raw.startswith(name, p + 4)
            if bad is None and level not in (0, 1, 2, 3):
                bad = (raw[p + 4 : end - 1].decode(), level)
            p = end
            for _ in range(2):  # message, hardware_id
                p += -p & 3
                end = p + 4 + words[p >> 2]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                if not ascii_only:
                    raw[p + 4 : end - 1].decode()
                p = end
            p += -p & 3
            count = words[p >> 2]
            p += 4
            if p + count > size:
                raise CdrMismatch("count")
            status_alarm = False
            for _ in range(count):
                p += -p & 3
                end = p + 4 + words[p >> 2]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                is_alarm = end - p == 10 and raw.startswith(b"alarm", p + 4)
                if not ascii_only:
                    raw[p + 4 : end - 1].decode()
                p = end + (-end & 3)
                end = p + 4 + words[p >> 2]
                if end <= p + 4 or end > size or raw[end - 1]:
                    raise CdrMismatch("string")
                if not ascii_only:
                    raw[p + 4 : end - 1].decode()
                if is_alarm:
                    status_alarm = end - p == 9 and raw.startswith(b"true", p + 4)
                p = end
            if named:
                alarm = status_alarm
    except (struct.error, IndexError, UnicodeDecodeError):
        raise CdrMismatch("truncated or invalid") from None
    _end(raw, p)
    return stamp, alarm, bad
