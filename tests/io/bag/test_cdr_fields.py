"""The field-selective CDR readers against rosbags' deserialiser (the reference): same values on random messages of
both byte orders, and never a value where rosbags refuses the bytes (truncations, byte flips, bad string lengths,
huge counts, invalid UTF-8)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import cdr_fields as cf
from perception_safety.io.typestore import ros2_typestore

T = ros2_typestore().types


def _text(rng: np.random.Generator) -> str:
    """0-9 characters, sometimes non-ASCII (2-3 byte UTF-8): every alignment after a string is exercised."""
    alphabet = [*"abcxyz_/0", "é", "ß", "中"]
    return "".join(rng.choice(alphabet) for _ in range(int(rng.integers(0, 10))))


def _float(rng: np.random.Generator) -> float:
    special = [math.nan, math.inf, -math.inf, -0.0, 0.0, -5.0, 1e308]
    return float(rng.choice(special)) if rng.uniform() < 0.1 else float(rng.uniform(-700, 700))


def _header(rng):
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=int(rng.integers(-2**31, 2**31)),
                                               nanosec=int(rng.integers(0, 2**32))),
        frame_id=_text(rng))


def random_detection_array(rng: np.random.Generator):
    dets = []
    for _ in range(int(rng.integers(0, 5))):
        results = []
        for _ in range(int(rng.integers(0, 3))):
            pose = T["geometry_msgs/msg/Pose"](
                position=T["geometry_msgs/msg/Point"](x=_float(rng), y=_float(rng), z=_float(rng)),
                orientation=T["geometry_msgs/msg/Quaternion"](x=_float(rng), y=0.0, z=0.0, w=1.0))
            results.append(T["vision_msgs/msg/ObjectHypothesisWithPose"](
                hypothesis=T["vision_msgs/msg/ObjectHypothesis"](class_id=_text(rng), score=_float(rng)),
                pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=rng.uniform(-1, 1, 36))))
        bbox = T["vision_msgs/msg/BoundingBox2D"](
            center=T["vision_msgs/msg/Pose2D"](position=T["vision_msgs/msg/Point2D"](x=_float(rng), y=_float(rng)),
                                               theta=_float(rng)),
            size_x=_float(rng), size_y=_float(rng))
        dets.append(T["vision_msgs/msg/Detection2D"](header=_header(rng), results=results, bbox=bbox, id=_text(rng)))
    return T[bm.DETECTIONS_TYPE](header=_header(rng), detections=dets)


def random_odometry(rng: np.random.Generator):
    msg = bm.ego_to_msg(bm.EgoState(1.0, 2.0, 0.3, 4.0), 0)
    msg.header = _header(rng)
    msg.child_frame_id = _text(rng)
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = _float(rng), _float(rng), _float(rng)
    q.x, q.y, q.z, q.w = _float(rng), _float(rng), _float(rng), _float(rng)
    msg.twist.twist.linear.x = _float(rng)
    msg.pose.covariance = rng.uniform(-1, 1, 36)
    return msg


def random_diagnostics(rng: np.random.Generator):
    statuses = [T["diagnostic_msgs/msg/DiagnosticStatus"](
        level=int(rng.integers(0, 6)), name=_text(rng), message=_text(rng), hardware_id=_text(rng),
        values=[T["diagnostic_msgs/msg/KeyValue"](key=_text(rng), value=_text(rng))
                for _ in range(int(rng.integers(0, 4)))]) for _ in range(int(rng.integers(0, 4)))]
    return T[bm.DIAGNOSTICS_TYPE](header=_header(rng), status=statuses)


def random_monitor_statuses(rng: np.random.Generator):
    """Monitor-like statuses: few names (one non-ASCII), ``alarm`` keys (sometimes two, sometimes none) with
    ``true``/``false``/other values, levels 0-5, sometimes ASCII only, sometimes not."""
    ascii_only = rng.uniform() < 0.5
    names, values = ["m", "mon", "alarm", "é"][: 3 if ascii_only else 4], ["true", "false", "True", "1", "", "中"]

    def pairs():
        keys = ["alarm", "x", "alarm", "alarms", "é"][: int(rng.integers(0, 4 if ascii_only else 6))]
        return [T["diagnostic_msgs/msg/KeyValue"](key=k, value=str(rng.choice(values[: 5 if ascii_only else 6])))
                for k in keys]

    statuses = [T["diagnostic_msgs/msg/DiagnosticStatus"](
        level=int(rng.choice([0, 1, 2, 3, 0, 1, 4, 5])), name=str(rng.choice(names)),
        message="ok" if ascii_only else _text(rng), hardware_id="camera", values=pairs())
        for _ in range(int(rng.integers(0, 5)))]
    header = _header(rng)
    if ascii_only:
        header.frame_id = "camera"
    return T[bm.DIAGNOSTICS_TYPE](header=header, status=statuses)


def expected_alarm(msg, name: str = "m"):
    """(stamp, the alarm of the last status named ``name``, the first (name, level) outside 0-3) from rosbags'
    message, as `bag_messages.result_from_fields` and `monitor_results_of_values` read them."""
    alarm, bad = None, None
    for st in msg.status:
        level = st.level[0] if isinstance(st.level, bytes) else int(st.level)
        level = level - 256 if level > 127 else level
        if bad is None and level not in (0, 1, 2, 3):
            bad = (st.name, level)
        if st.name == name:
            alarm = False
            for kv in st.values:
                if kv.key == "alarm":
                    alarm = kv.value == "true"
    return stamp(msg), alarm, bad


def stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def same_float(a: float, b: float) -> bool:
    return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))


def expected_detections(msg):
    out = []
    for d in msg.detections:
        first = (d.results[0].hypothesis.class_id, d.results[0].hypothesis.score) if d.results else None
        pos = d.results[0].pose.pose.position if d.results else None
        b = d.bbox
        out.append((first, None if pos is None else (pos.x, pos.y, pos.z),
                    (b.center.position.x, b.center.position.y, b.size_x, b.size_y), d.id))
    return stamp(msg), out


def expected_odometry(msg):
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    return stamp(msg), (p.x, p.y, q.x, q.y, q.z, q.w, msg.twist.twist.linear.x)


def expected_diagnostics(msg):
    return stamp(msg), [(st.level[0] if isinstance(st.level, bytes) else int(st.level), st.name, st.message,
                         [(kv.key, kv.value) for kv in st.values]) for st in msg.status]


CASES = [
    (bm.DETECTIONS_TYPE, random_detection_array, cf.detection2d_array, expected_detections),
    (bm.ODOMETRY_TYPE, random_odometry, cf.odometry, expected_odometry),
    (bm.DIAGNOSTICS_TYPE, random_diagnostics, cf.diagnostic_array, expected_diagnostics),
    (bm.DIAGNOSTICS_TYPE, random_monitor_statuses, lambda raw: cf.diagnostic_alarm(raw, b"m"), expected_alarm),
    (bm.DIAGNOSTICS_TYPE, random_monitor_statuses, lambda raw: cf.diagnostic_alarm(raw, "é".encode()),
     lambda msg: expected_alarm(msg, "é")),
]


def _flat(value):
    """Nested tuples/lists of floats and strings as a flat list (floats compared bit for bit below)."""
    if isinstance(value, list | tuple):
        return [x for v in value for x in _flat(v)]
    return [value]


def assert_same(got, want) -> None:
    a, b = _flat(got), _flat(want)
    assert len(a) == len(b) and repr(got).count("(") == repr(want).count("(")
    for x, y in zip(a, b, strict=True):
        assert (same_float(x, y) if isinstance(x, float) else (type(x) is type(y) and x == y)), (x, y)


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize(("msgtype", "make", "read", "expected"), CASES)
def test_reads_the_values_rosbags_reads(msgtype, make, read, expected, little):
    store = ros2_typestore()
    rng = np.random.default_rng(11)
    for _ in range(300):
        raw = bytes(store.serialize_cdr(make(rng), msgtype, little_endian=little))
        assert_same(read(raw), expected(store.deserialize_cdr(raw, msgtype)))


def _mutations(raw: bytes, rng: np.random.Generator):
    """Truncations at every length, single and multiple byte changes, u32 fields made huge, trailing bytes."""
    for n in range(len(raw)):
        yield raw[:n]
    for _ in range(150):
        data = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        yield bytes(data)
    for where in range(4, len(raw) - 3, 4):  # every aligned word as a string length / count
        for value in (0, 0xFFFFFFFF, 0x7FFFFFFF, len(raw)):
            yield raw[:where] + value.to_bytes(4, "little") + raw[where + 4:]
    yield raw + b"\0" * 4
    yield raw + b"\0" * 3
    yield b"\x00\x02" + raw[2:]


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize(("msgtype", "make", "read", "expected"), CASES)
def test_never_reads_a_value_where_rosbags_refuses_the_bytes(msgtype, make, read, expected, little):
    store = ros2_typestore()
    rng = np.random.default_rng(5)
    refused = 0
    for _ in range(6):
        raw = bytes(store.serialize_cdr(make(rng), msgtype, little_endian=little))
        for data in _mutations(raw, rng):
            try:
                want = expected(store.deserialize_cdr(data, msgtype))
            except Exception:
                refused += 1
                with pytest.raises(cf.CdrMismatch):
                    read(data)
                continue
            try:
                got = read(data)
            except cf.CdrMismatch:
                continue  # handed to rosbags: its value is the one used
            assert_same(got, want)
    assert refused > 100


def test_the_layouts_read_are_the_type_stores():
    """The readers hard-code these layouts; a typestore change must fail here, not mis-read bags."""
    defs = ros2_typestore().fielddefs

    def names(t):
        return [(n, d[0].name, d[1] if d[0].name != "SEQUENCE" and d[0].name != "ARRAY" else
                 (d[1][0][1], d[1][1])) for n, d in defs[t][1]]

    assert names("vision_msgs/msg/Detection2DArray") == [
        ("header", "NAME", "std_msgs/msg/Header"), ("detections", "SEQUENCE", ("vision_msgs/msg/Detection2D", 0))]
    assert names("vision_msgs/msg/Detection2D") == [
        ("header", "NAME", "std_msgs/msg/Header"),
        ("results", "SEQUENCE", ("vision_msgs/msg/ObjectHypothesisWithPose", 0)),
        ("bbox", "NAME", "vision_msgs/msg/BoundingBox2D"), ("id", "BASE", ("string", 0))]
    assert names("vision_msgs/msg/ObjectHypothesisWithPose") == [
        ("hypothesis", "NAME", "vision_msgs/msg/ObjectHypothesis"),
        ("pose", "NAME", "geometry_msgs/msg/PoseWithCovariance")]
    assert names("vision_msgs/msg/ObjectHypothesis") == [("class_id", "BASE", ("string", 0)),
                                                         ("score", "BASE", ("float64", 0))]
    assert names("geometry_msgs/msg/PoseWithCovariance") == [
        ("pose", "NAME", "geometry_msgs/msg/Pose"), ("covariance", "ARRAY", (("float64", 0), 36))]
    assert names("nav_msgs/msg/Odometry") == [
        ("header", "NAME", "std_msgs/msg/Header"), ("child_frame_id", "BASE", ("string", 0)),
        ("pose", "NAME", "geometry_msgs/msg/PoseWithCovariance"),
        ("twist", "NAME", "geometry_msgs/msg/TwistWithCovariance")]
    assert names("diagnostic_msgs/msg/DiagnosticStatus") == [
        ("level", "BASE", ("byte", 0)), ("name", "BASE", ("string", 0)), ("message", "BASE", ("string", 0)),
        ("hardware_id", "BASE", ("string", 0)), ("values", "SEQUENCE", ("diagnostic_msgs/msg/KeyValue", 0))]
