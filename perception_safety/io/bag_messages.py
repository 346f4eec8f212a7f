"""Conversion between core values and rosbags message objects (the wire layout of DESIGN.md).

- camera: ``sensor_msgs/Image``, encodings rgb8 / bgr8 / mono8 (read as RGB or mono), or
  ``sensor_msgs/CompressedImage`` (JPEG/PNG, image_transport's ``<camera>/image_raw/compressed``; decoded
  once with OpenCV, `image_codec`), with ``sensor_msgs/CameraInfo`` (size and pinhole intrinsics);
- detections and ground truth: ``vision_msgs/Detection2DArray``; a box travels as centre and size,
  the class and score in ``results[0].hypothesis``, a ground-truth object's ego-frame position in
  ``results[0].pose.pose.position`` (metres; distance = its norm) and its track id in ``id``;
- ego state: ``nav_msgs/Odometry`` (position x/y, yaw from the orientation quaternion, speed =
  ``twist.twist.linear.x``);
- monitor results: ``diagnostic_msgs/DiagnosticArray``, one status per monitor (the layout of
  `status_fields`, shared with the ROS nodes' ``/diagnostics`` and ``~/monitor_results``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import (
    Box,
    Detection,
    EgoState,
    GroundTruthObject,
    InvalidValueError,
    make_box_from_center,
    make_ground_truth,
)
from perception_safety.io.typestore import ros2_typestore
from perception_safety.monitors.base import Level, MonitorResult

IMAGE_TYPE = "sensor_msgs/msg/Image"
COMPRESSED_IMAGE_TYPE = "sensor_msgs/msg/CompressedImage"
CAMERA_INFO_TYPE = "sensor_msgs/msg/CameraInfo"
DETECTIONS_TYPE = "vision_msgs/msg/Detection2DArray"
ODOMETRY_TYPE = "nav_msgs/msg/Odometry"
DIAGNOSTICS_TYPE = "diagnostic_msgs/msg/DiagnosticArray"

_CHANNELS = {"rgb8": 3, "bgr8": 3, "mono8": 1}
_isfinite = math.isfinite


def _t(name: str) -> Any:
    return ros2_typestore().types[name]


def header(stamp_ns: int, frame_id: str = "") -> Any:
    """A std_msgs/Header for an integer-nanosecond stamp."""
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    return _t("std_msgs/msg/Header")(
        stamp=_t("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec), frame_id=frame_id
    )


def stamp_ns_of(msg: Any) -> int:
    """The header stamp of a message in integer nanoseconds."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def image_to_msg(image: np.ndarray, stamp_ns: int, frame_id: str = "camera") -> Any:
    """An HxWx3 RGB or HxW mono uint8 array as a sensor_msgs/Image (rgb8 / mono8)."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] != 3):
        raise InvalidValueError(f"image: expected HxWx3 or HxW uint8, got {arr.dtype} {arr.shape}")
    h, w = arr.shape[:2]
    encoding = "rgb8" if arr.ndim == 3 else "mono8"
    step = w * _CHANNELS[encoding]
    return _t(IMAGE_TYPE)(
        header=header(stamp_ns, frame_id),
        height=h,
        width=w,
        encoding=encoding,
        is_bigendian=0,
        step=step,
        data=arr.reshape(-1),
    )


def image_from_msg(msg: Any) -> np.ndarray:
    """A sensor_msgs/Image as HxWx3 RGB (rgb8/bgr8) or HxW (mono8) uint8; checks sizes and encoding."""
    enc = str(msg.encoding).lower()
    if enc not in _CHANNELS:
        raise InvalidValueError(f"image: unsupported encoding {msg.encoding!r} (expected one of {sorted(_CHANNELS)})")
    ch = _CHANNELS[enc]
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if step < w * ch:
        raise InvalidValueError(f"image: step {step} is smaller than width*channels {w * ch}")
    data = np.asarray(msg.data, dtype=np.uint8)
    if data.size != step * h:
        raise InvalidValueError(f"image: data length {data.size} does not match height*step {h}*{step}={h * step}")
    rows = data.reshape(h, step)[:, : w * ch]
    img = rows.reshape(h, w, ch) if ch == 3 else rows.reshape(h, w)
    if enc == "bgr8":
        img = img[:, :, ::-1]
    return np.ascontiguousarray(img)


def compressed_image_to_msg(payload: bytes, stamp_ns: int, frame_id: str = "camera", fmt: str = "jpeg") -> Any:
    """Encoded image bytes as a sensor_msgs/CompressedImage (``format`` as image_transport writes it)."""
    return _t(COMPRESSED_IMAGE_TYPE)(
        header=header(stamp_ns, frame_id),
        format=f"rgb8; {fmt} compressed bgr8",
        data=np.frombuffer(payload, dtype=np.uint8),
    )


def compressed_image_from_msg(msg: Any) -> np.ndarray:
    """A sensor_msgs/CompressedImage as HxWx3 RGB / HxW mono uint8 (`image_codec.decode`)."""
    from perception_safety.io.image_codec import decode

    return decode(msg.data)


def camera_info_to_msg(
    size: tuple[int, int], k: tuple[float, float, float, float], stamp_ns: int, frame_id: str = "camera"
) -> Any:
    """A sensor_msgs/CameraInfo: ``size = (width, height)``, ``k = (fx, fy, cx, cy)``, no distortion."""
    fx, fy, cx, cy = (float(v) for v in k)
    kmat = np.array([fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0])
    pmat = np.array([fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0])
    roi = _t("sensor_msgs/msg/RegionOfInterest")(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False)
    return _t(CAMERA_INFO_TYPE)(
        header=header(stamp_ns, frame_id), height=int(size[1]), width=int(size[0]), distortion_model="plumb_bob",
        d=np.zeros(5), k=kmat, r=np.eye(3).reshape(-1), p=pmat, binning_x=0, binning_y=0, roi=roi,
    )


def camera_info_size(msg: Any) -> tuple[int, int]:
    """``(width, height)`` of a CameraInfo; a zero size is invalid (uncalibrated)."""
    w, h = int(msg.width), int(msg.height)
    if w <= 0 or h <= 0:
        raise InvalidValueError(f"camera_info: image size {w}x{h} is not positive")
    return w, h


def camera_info_intrinsics(msg: Any) -> Intrinsics | None:
    """The pinhole intrinsics of a CameraInfo (K's fx, fy, cx, cy and the size); ``None`` when K is all zero
    (an uncalibrated camera: its size is known, its model is not). Distortion is not modelled: rectified images."""
    w, h = camera_info_size(msg)
    k = [float(v) for v in msg.k]
    if len(k) != 9:
        raise InvalidValueError(f"camera_info: K has {len(k)} entries, expected 9")
    if not any(k):
        return None
    fx, fy, cx, cy = k[0], k[4], k[2], k[5]
    if not all(math.isfinite(v) for v in (fx, fy, cx, cy)) or fx <= 0 or fy <= 0:
        raise InvalidValueError(f"camera_info: K has fx={fx}, fy={fy}, cx={cx}, cy={cy}: not a pinhole camera")
    return Intrinsics(fx, fy, cx, cy, w, h)


def camera_info_reading(msg: Any) -> tuple[tuple[int, int], Intrinsics | None]:
    """``(size, intrinsics or None)`` of a CameraInfo (what the bag reader joins to a frame)."""
    return camera_info_size(msg), camera_info_intrinsics(msg)


def check_image_size(image: np.ndarray, info_size: tuple[int, int] | None) -> None:
    """Refuse an image whose size disagrees with its CameraInfo (boxes and intrinsics would be in another frame)."""
    if info_size is None:
        return
    h, w = image.shape[:2]
    if (w, h) != tuple(info_size):
        raise InvalidValueError(
            f"image: size {w}x{h} disagrees with camera_info {info_size[0]}x{info_size[1]} "
            "(boxes and intrinsics are in the camera_info's pixel frame)")


def _detection2d(
    box: Box,
    class_id: str,
    score: float,
    position: tuple[float, float, float] | None,
    ident: str,
    stamp_ns: int,
    frame_id: str,
) -> Any:
    cx, cy = box.center
    pos = position or (0.0, 0.0, 0.0)
    pose = _t("geometry_msgs/msg/Pose")(
        position=_t("geometry_msgs/msg/Point")(x=float(pos[0]), y=float(pos[1]), z=float(pos[2])),
        orientation=_t("geometry_msgs/msg/Quaternion")(x=0.0, y=0.0, z=0.0, w=1.0),
    )
    hyp = _t("vision_msgs/msg/ObjectHypothesisWithPose")(
        hypothesis=_t("vision_msgs/msg/ObjectHypothesis")(class_id=class_id, score=float(score)),
        pose=_t("geometry_msgs/msg/PoseWithCovariance")(pose=pose, covariance=np.zeros(36, dtype=np.float64)),
    )
    bbox = _t("vision_msgs/msg/BoundingBox2D")(
        center=_t("vision_msgs/msg/Pose2D")(position=_t("vision_msgs/msg/Point2D")(x=cx, y=cy), theta=0.0),
        size_x=box.width,
        size_y=box.height,
    )
    return _t("vision_msgs/msg/Detection2D")(header=header(stamp_ns, frame_id), results=[hyp], bbox=bbox, id=ident)


def detections_to_msg(detections: tuple[Detection, ...], stamp_ns: int, frame_id: str = "camera") -> Any:
    """Detections as a vision_msgs/Detection2DArray."""
    dets = [_detection2d(d.box, d.class_id, d.score, None, "", stamp_ns, frame_id) for d in detections]
    return _t(DETECTIONS_TYPE)(header=header(stamp_ns, frame_id), detections=dets)


def ground_truth_to_msg(objects: tuple[GroundTruthObject, ...], stamp_ns: int, frame_id: str = "camera") -> Any:
    """Ground truth as a vision_msgs/Detection2DArray. An object without a position is written at
    ``(distance, 0, 0)`` so that its distance survives the trip; an ignore region (KITTI DontCare, COCO iscrowd)
    has hypothesis score 0, every object score 1."""
    dets = [
        _detection2d(
            g.box,
            g.class_id,
            0.0 if g.ignore else 1.0,
            g.position if g.position is not None else (g.distance, 0.0, 0.0),
            g.track_id,
            stamp_ns,
            frame_id,
        )
        for g in objects
    ]
    return _t(DETECTIONS_TYPE)(header=header(stamp_ns, frame_id), detections=dets)


def box_of_values(i: int, cx: float, cy: float, size_x: float, size_y: float) -> Box:
    """The box of detection ``i`` from its BoundingBox2D values; `InvalidValueError` names a bad one."""
    if not _isfinite(cx + cy + size_x + size_y) and not (  # a finite sum: every term finite (one test, not four)
            _isfinite(cx) and _isfinite(cy) and _isfinite(size_x) and _isfinite(size_y)):
        raise InvalidValueError(f"detections[{i}]: non-finite box {(cx, cy, size_x, size_y)}")
    if size_x < 0 or size_y < 0:
        raise InvalidValueError(f"detections[{i}]: negative box size ({size_x}, {size_y})")
    return make_box_from_center(cx, cy, size_x, size_y)


def hypothesis_of_values(i: int, first: tuple[Any, float] | None) -> tuple[str, float]:
    """``(class id, score)`` of detection ``i`` from its first result's hypothesis (``None``: no results)."""
    if first is None:
        raise InvalidValueError(f"detections[{i}]: no results (class hypothesis) present")
    class_id, score = first
    if not math.isfinite(score):
        raise InvalidValueError(f"detections[{i}]: non-finite score {score}")
    return str(class_id), float(score)


def ground_truth_of_values(i: int, first: tuple[Any, float] | None, position: tuple[float, float, float],
                           box: tuple[float, float, float, float], ident: Any) -> GroundTruthObject:
    """A ground-truth object from its Detection2D values (checks in the order of `ground_truth_from_msg`): an
    ignore region when its score is 0."""
    class_id, score = hypothesis_of_values(i, first)
    b = box_of_values(i, *box)
    pos = (float(position[0]), float(position[1]), float(position[2]))
    return make_ground_truth(b, class_id, math.hypot(*pos), pos, str(ident), score == 0.0)


def _first(det: Any) -> tuple[Any, float] | None:
    if not det.results:
        return None
    hyp = det.results[0].hypothesis
    return hyp.class_id, hyp.score


def _box_of(det: Any, i: int) -> Box:
    b = det.bbox
    return box_of_values(i, b.center.position.x, b.center.position.y, b.size_x, b.size_y)


def _hypothesis(det: Any, i: int) -> tuple[str, float]:
    return hypothesis_of_values(i, _first(det))


def detections_from_msg(msg: Any) -> tuple[Detection, ...]:
    """A Detection2DArray as detections; raises `InvalidValueError` naming the offending entry."""
    out = []
    for i, det in enumerate(msg.detections):
        class_id, score = _hypothesis(det, i)
        out.append(Detection(_box_of(det, i), class_id, score))
    return tuple(out)


def readable_detections(msg: Any) -> tuple[tuple[Detection, ...], tuple[str, ...]]:
    """The readable detections of a Detection2DArray and one problem per unreadable entry (never raises on an
    entry): the live monitor judges what it can read and reports the rest (cannot judge is not OK)."""
    out, problems = [], []
    for i, det in enumerate(msg.detections):
        try:
            class_id, score = _hypothesis(det, i)
            out.append(Detection(_box_of(det, i), class_id, score))
        except (InvalidValueError, ValueError, TypeError, AttributeError) as exc:
            problems.append(str(exc))
    return tuple(out), tuple(problems)


def ground_truth_from_msg(msg: Any) -> tuple[GroundTruthObject, ...]:
    """A ground-truth Detection2DArray as objects with position and distance (its norm)."""
    out = []
    for i, det in enumerate(msg.detections):
        first = _first(det)
        p = det.results[0].pose.pose.position if first is not None else None
        b = det.bbox
        box = (b.center.position.x, b.center.position.y, b.size_x, b.size_y)
        out.append(ground_truth_of_values(i, first, (p.x, p.y, p.z) if p is not None else (0.0, 0.0, 0.0), box,
                                          det.id))
    return tuple(out)


def ego_to_msg(ego: EgoState, stamp_ns: int, frame_id: str = "map") -> Any:
    """Ego state as nav_msgs/Odometry (yaw as a quaternion about z)."""
    pose = _t("geometry_msgs/msg/Pose")(
        position=_t("geometry_msgs/msg/Point")(x=ego.x, y=ego.y, z=0.0),
        orientation=_t("geometry_msgs/msg/Quaternion")(x=0.0, y=0.0, z=math.sin(ego.yaw / 2), w=math.cos(ego.yaw / 2)),
    )
    zero3 = _t("geometry_msgs/msg/Vector3")(x=0.0, y=0.0, z=0.0)
    twist = _t("geometry_msgs/msg/Twist")(
        linear=_t("geometry_msgs/msg/Vector3")(x=ego.speed, y=0.0, z=0.0), angular=zero3
    )
    return _t(ODOMETRY_TYPE)(
        header=header(stamp_ns, frame_id),
        child_frame_id="ego",
        pose=_t("geometry_msgs/msg/PoseWithCovariance")(pose=pose, covariance=np.zeros(36)),
        twist=_t("geometry_msgs/msg/TwistWithCovariance")(twist=twist, covariance=np.zeros(36)),
    )


def ego_of_values(x: float, y: float, qx: float, qy: float, qz: float, qw: float, speed: float) -> EgoState:
    """Ego state from an Odometry's position, orientation quaternion and forward speed (yaw about z)."""
    yaw = math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    return EgoState(x=float(x), y=float(y), yaw=yaw, speed=float(speed))


def ego_from_msg(msg: Any) -> EgoState:
    """nav_msgs/Odometry as ego state (yaw from the quaternion)."""
    q, p = msg.pose.pose.orientation, msg.pose.pose.position
    return ego_of_values(p.x, p.y, q.x, q.y, q.z, q.w, msg.twist.twist.linear.x)


def value_text(v: object) -> str:
    """A diagnostic value as text: ``true``/``false``, floats as their shortest round-tripping ``repr``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def status_fields(result: MonitorResult, message: str | None = None) -> tuple[str, int, str, list[tuple[str, str]]]:
    """``(name, level, message, [(key, value)])`` of a monitor result's DiagnosticStatus: ``alarm`` first,
    then the numeric values; the message is the reasons joined by ``; `` (or ``alarm`` / ``ok``)."""
    text = message if message is not None else ("; ".join(result.reasons) or ("alarm" if result.alarm else "ok"))
    pairs = [("alarm", value_text(result.alarm))] + [(str(k), value_text(v)) for k, v in result.values.items()]
    return result.name, int(result.level), text, pairs


def result_from_fields(name: str, level: int, message: str, pairs: list[tuple[str, str]]) -> MonitorResult:
    """Inverse of `status_fields`: numeric values parsed back exactly, reasons from the message."""
    values: dict[str, float] = {}
    alarm = False
    for key, value in pairs:
        if key == "alarm":
            alarm = value == "true"
            continue
        try:
            values[str(key)] = float(value)
        except ValueError:
            continue
    reasons = () if message in ("ok", "alarm", "") else tuple(message.split("; "))
    return MonitorResult(name=name, alarm=alarm, level=Level(level), reasons=reasons, values=values)


def monitor_results_to_msg(results: tuple[MonitorResult, ...], stamp_ns: int, hardware_id: str = "camera") -> Any:
    """Monitor results of one frame as a diagnostic_msgs/DiagnosticArray."""
    statuses = []
    for r in results:
        name, level, message, pairs = status_fields(r)
        kvs = [_t("diagnostic_msgs/msg/KeyValue")(key=k, value=v) for k, v in pairs]
        statuses.append(
            _t("diagnostic_msgs/msg/DiagnosticStatus")(
                level=level, name=name, message=message, hardware_id=hardware_id, values=kvs
            )
        )
    return _t(DIAGNOSTICS_TYPE)(header=header(stamp_ns, hardware_id), status=statuses)


def bad_level(name: str, level: int) -> InvalidValueError:
    """The error of a DiagnosticStatus whose level is not OK/WARN/ERROR/STALE (0-3)."""
    return InvalidValueError(f"status {name!r}: level {level} is not OK/WARN/ERROR/STALE")


def alarm_of(results: tuple[MonitorResult, ...], name: str) -> bool | None:
    """The alarm of the last result named ``name`` (``None``: no result has that name)."""
    alarm = None
    for r in results:
        if r.name == name:
            alarm = bool(r.alarm)
    return alarm


def monitor_results_of_values(statuses: Any) -> tuple[MonitorResult, ...]:
    """Monitor results from ``(level, name, message, [(key, value)])`` per DiagnosticStatus."""
    out = []
    for level, name, message, pairs in statuses:
        if level not in (0, 1, 2, 3):
            raise bad_level(name, level)
        out.append(result_from_fields(str(name), level, str(message), pairs))
    return tuple(out)


def monitor_results_from_msg(msg: Any) -> tuple[MonitorResult, ...]:
    """A DiagnosticArray of monitor statuses back as results."""
    return monitor_results_of_values(
        (st.level[0] if isinstance(st.level, bytes | bytearray) else int(st.level), st.name, st.message,
         [(kv.key, kv.value) for kv in st.values])
        for st in msg.status)
