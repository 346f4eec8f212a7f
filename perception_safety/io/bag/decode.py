"""One message of a bag to the value a frame carries: through the field-selective readers of `cdr_fields` where
the type has one, else (and for every message those readers hand over) rosbags' deserialiser and the message
converters of `io.bag_messages`. Both paths end in the same checks, so a value, a skip reason or an error is the
same whichever path read the bytes."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from perception_safety.core.types import (
    Detection,
    GroundTruthObject,
    make_box_from_center,
    make_detection,
    make_ground_truth,
)
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import cdr_fields as cf
from perception_safety.monitors.base import MonitorResult

_isfinite, _hypot = math.isfinite, math.hypot


def _detections(raw: bytes) -> tuple[int, tuple[Detection, ...]]:
    """Detections of a Detection2DArray: an entry whose hypothesis and box pass the checks in one test (a finite
    sum: every term finite; sizes not negative) is built here, any other goes through `bag_messages`' checks,
    which build it or raise the error the rosbags path raises."""
    stamp, items = cf.detection2d_array(raw)
    out = []
    for i, (first, _, (cx, cy, sx, sy), _) in enumerate(items):
        if first is not None and sx >= 0 and sy >= 0 and _isfinite(first[1] + cx + cy + sx + sy):
            out.append(make_detection(make_box_from_center(cx, cy, sx, sy), first[0], first[1]))
        else:
            class_id, score = bm.hypothesis_of_values(i, first)
            out.append(make_detection(bm.box_of_values(i, cx, cy, sx, sy), class_id, score))
    return stamp, tuple(out)


def _ground_truth(raw: bytes) -> tuple[int, tuple[GroundTruthObject, ...]]:
    """Ground truth of a Detection2DArray, the regular entries built here as in `_detections`."""
    stamp, items = cf.detection2d_array(raw)
    out = []
    for i, (first, position, box, ident) in enumerate(items):
        cx, cy, sx, sy = box
        if first is not None and position is not None and sx >= 0 and sy >= 0 and \
                _isfinite(first[1] + cx + cy + sx + sy):
            out.append(make_ground_truth(make_box_from_center(cx, cy, sx, sy), first[0], _hypot(*position),
                                         position, ident, first[1] == 0.0))
        else:
            out.append(bm.ground_truth_of_values(i, first, position or (0.0, 0.0, 0.0), box, ident))
    return stamp, tuple(out)


def _ego(raw: bytes) -> tuple[int, Any]:
    stamp, values = cf.odometry(raw)
    return stamp, bm.ego_of_values(*values)


def _statuses(raw: bytes) -> tuple[int, tuple[MonitorResult, ...]]:
    stamp, statuses = cf.diagnostic_array(raw)
    return stamp, bm.monitor_results_of_values(statuses)


FAST: dict[tuple[str, str], Callable[[bytes], tuple[int, Any]]] = {
    ("detections", bm.DETECTIONS_TYPE): _detections,
    ("candidates", bm.DETECTIONS_TYPE): _detections,
    ("ground_truth", bm.DETECTIONS_TYPE): _ground_truth,
    ("ego", bm.ODOMETRY_TYPE): _ego,
    ("monitor_results", bm.DIAGNOSTICS_TYPE): _statuses,
}
"""(topic role, message type) -> reader of ``(stamp_ns, value)`` from CDR bytes."""


_TABLE: Any = object()
"""`reader_of`'s default field-selective reader: `FAST`'s for the topic role and type."""


def reader_of(role: str, msgtype: str, store: Any, convert: Callable[[Any], Any],
              fast: Callable[[bytes], tuple[int, Any]] | None = _TABLE) -> Callable[[Any], tuple[int, Any]]:
    """The `decode` of one topic, resolved once per connection (not once per message): ``raw -> (stamp_ns, value)``;
    ``fast``: a field-selective reader of the bytes in place of `FAST`'s (None: rosbags only), which raises
    `cdr_fields.CdrMismatch` for bytes it does not read (they go to rosbags and ``convert``)."""
    fast = FAST.get((role, msgtype)) if fast is _TABLE else fast

    def checked(raw: bytes | memoryview) -> tuple[int, Any]:
        msg = store.deserialize_cdr(memoryview(raw), msgtype)
        value = convert(msg)
        return bm.stamp_ns_of(msg), value

    if fast is None:
        return checked

    def read(raw: bytes | memoryview) -> tuple[int, Any]:
        try:
            return fast(raw if isinstance(raw, bytes) else bytes(raw))
        except cf.CdrMismatch:
            return checked(raw)

    return read


def alarm_reader(msgtype: str, store: Any, name: str) -> Callable[[Any], tuple[int, bool | None]]:
    """`reader_of` for the verdict pass, resolved once per connection: ``raw -> (stamp_ns, alarm of the last status
    named name or None)``, as ``bm.alarm_of`` finds it in what `decode` returns for the message (the same value, skip
    reason or error); the field-selective reader skips building the results."""
    key = name.encode()

    def alarm_only(data: bytes) -> tuple[int, bool | None]:
        stamp, alarm, bad = cf.diagnostic_alarm(data, key)
        if bad is not None:
            raise bm.bad_level(*bad)
        return stamp, alarm

    return reader_of("monitor_results", msgtype, store, lambda msg: bm.alarm_of(bm.monitor_results_from_msg(msg), name),
                     alarm_only if ("monitor_results", msgtype) in FAST else None)


def decode(role: str, msgtype: str, raw: bytes | memoryview, store: Any,
           convert: Callable[[Any], Any]) -> tuple[int, Any]:
    """``(stamp_ns, value)`` of one message: the field-selective reader when there is one and it reads the bytes,
    else rosbags' ``store.deserialize_cdr`` and ``convert`` (the value raises what the converter raises)."""
    return reader_of(role, msgtype, store, convert)(raw)


def decode_alarm(msgtype: str, raw: bytes | memoryview, store: Any, name: str) -> tuple[int, bool | None]:
    """`alarm_reader` of one monitor-results message."""
    return alarm_reader(msgtype, store, name)(raw)
