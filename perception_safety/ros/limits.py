"""Bounded work per message: the number of detections in a ``Detection2DArray`` is read from the raw CDR bytes
*before* deserializing, so an oversized message costs microseconds, not the 24 GB one 100k-detection message
once took (issue 19 item 2). Over the limit the message is rejected: skipped and reported on /diagnostics (the
paired image then finds no partner; if it persists, the liveness status turns ERROR and requests a stop).
Truncating instead would need the full decode, which is the cost to avoid (rosbags: 24 s for 100k detections).
"""

from __future__ import annotations

import struct

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.ros.convert import MessageError

#: upper bound of the ``limits.max_detections`` parameter
MAX_DETECTIONS_LIMIT = 100_000


class DetectionLimits(BaseModel):
    """``limits`` parameters: detections per message (more: the message is rejected)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_detections: int = Field(default=500, ge=1, le=MAX_DETECTIONS_LIMIT,
                                description="detections per Detection2DArray message; more: rejected")


def detection_count(raw: bytes | memoryview) -> int:
    """Number of detections of a CDR-encoded ``vision_msgs/Detection2DArray`` (header, then the sequence length).

    Raises `ValueError` on bytes too short or a non-CDR encapsulation (the full decode then reports it).
    """
    buf = memoryview(raw)
    if len(buf) < 16 or buf[0] != 0 or buf[1] not in (0, 1):
        raise ValueError("not a CDR message")
    order = "<" if buf[1] == 1 else ">"
    # body offsets are relative to the end of the 4-byte encapsulation header
    (strlen,) = struct.unpack_from(order + "I", buf, 4 + 8)  # after stamp (int32 sec, uint32 nanosec)
    off = 8 + 4 + strlen
    off += -off % 4
    if 4 + off + 4 > len(buf):
        raise ValueError("truncated header")
    (count,) = struct.unpack_from(order + "I", buf, 4 + off)
    return int(count)


def check_count(raw: bytes | memoryview, limits: DetectionLimits, topic: str) -> None:
    """Raise `MessageError` when the message holds more than ``limits.max_detections`` detections.

    Bytes that cannot be parsed here pass: the full decode reports them with the field.
    """
    try:
        count = detection_count(raw)
    except (ValueError, struct.error):
        return
    if count > limits.max_detections:
        raise MessageError(f"{topic}: {count} detections in one message > limits.max_detections "
                           f"{limits.max_detections}: message rejected")
