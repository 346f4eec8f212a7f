"""3D object lists on the wire <-> `Detection` / `GroundTruthObject` (docs/objects3d.md).

Read: ``vision_msgs/Detection3DArray`` (detections and ground truth) and Autoware's
``autoware_perception_msgs/DetectedObjects`` (detections). Positions are taken in the message's frame, which
must be the ego frame (``base_link``: x forward, y left, z up); an object's distance is the ground-plane distance
of its centre, ``hypot(x, y)`` (as in the nuScenes benchmark).
The 2D box of such an object is its bird's-eye-view footprint in metres, axis-aligned in the ego frame
(``x ± length/2, y ± width/2``; the heading is not used): matching uses the footprint's centre
(``confusion.matching: centre_distance``), never its IoU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from perception_safety.core.types import Box, Detection, GroundTruthObject, InvalidValueError
from perception_safety.io.bag_messages import header
from perception_safety.io.typestore import ros2_typestore

DETECTIONS_3D_TYPE = "vision_msgs/msg/Detection3DArray"
AUTOWARE_OBJECTS_TYPE = "autoware_perception_msgs/msg/DetectedObjects"


def _t(name: str) -> Any:
    return ros2_typestore().types[name]


AUTOWARE_LABELS = (
    "unknown", "car", "truck", "bus", "trailer", "motorcycle", "bicycle", "pedestrian", "animal", "hazard",
    "over_drivable", "under_drivable",
)
"""``ObjectClassification.label`` values 0..11 by name (lower case, as the class map sees them)."""


def footprint(position: tuple[float, float, float], length: float, width: float, what: str) -> Box:
    """The axis-aligned bird's-eye-view footprint of an object centred at ``position`` (metres, ego frame)."""
    values = (*position, length, width)
    if not all(math.isfinite(v) for v in values):
        raise InvalidValueError(f"{what}: non-finite position or size {values}")
    if length < 0 or width < 0:
        raise InvalidValueError(f"{what}: negative size ({length}, {width})")
    x, y = position[0], position[1]
    return Box(x - length / 2.0, y - width / 2.0, x + length / 2.0, y + width / 2.0)


def _hypothesis_3d(det: Any, what: str) -> tuple[str, float]:
    if not det.results:
        raise InvalidValueError(f"{what}: no results (class hypothesis) present")
    scores = [float(r.hypothesis.score) for r in det.results]
    if not all(math.isfinite(s) for s in scores):
        raise InvalidValueError(f"{what}: non-finite score in {scores}")
    best = det.results[int(np.argmax(scores))]
    if not str(best.hypothesis.class_id).strip():
        raise InvalidValueError(f"{what}: empty class_id")
    return str(best.hypothesis.class_id), max(scores)


GLOBAL_FRAMES = frozenset({"map", "odom", "world", "earth", "utm", "global"})
"""Frame ids of fixed (non-ego) frames: positions there give no distance from the ego."""


def _ego_frame(msg: Any) -> None:
    frame = str(msg.header.frame_id).strip().lstrip("/")
    if frame.lower() in GLOBAL_FRAMES:
        raise InvalidValueError(f"header.frame_id {frame!r} is a fixed frame: positions must be in the ego frame "
                                "(base_link); transform the list first")


def _centre(pose: Any) -> tuple[float, float, float]:
    p = pose.position
    return (float(p.x), float(p.y), float(p.z))


def _read_3d(msg: Any, role: str) -> Iterator[tuple[Any, str, float, tuple[float, float, float], Box]]:
    """``(entry, class, score, centre, footprint)`` of each entry of a Detection3DArray (errors name ``role[i]``)."""
    _ego_frame(msg)
    for i, det in enumerate(msg.detections):
        what = f"{role}[{i}]"
        class_id, score = _hypothesis_3d(det, what)
        pos = _centre(det.bbox.center)
        yield det, class_id, score, pos, footprint(pos, float(det.bbox.size.x), float(det.bbox.size.y), what)


def detections_from_3d_msg(msg: Any) -> tuple[Detection, ...]:
    """A Detection3DArray as detections (highest-scoring hypothesis, centre, footprint)."""
    return tuple(Detection(box, cls, score, pos) for _, cls, score, pos, box in _read_3d(msg, "detections"))


def ground_truth_from_3d_msg(msg: Any) -> tuple[GroundTruthObject, ...]:
    """A ground-truth Detection3DArray as objects (distance = ``hypot(x, y)`` of the centre, track id = ``id``)."""
    return tuple(GroundTruthObject(box, cls, math.hypot(pos[0], pos[1]), pos, str(det.id))
                 for det, cls, _, pos, box in _read_3d(msg, "ground_truth"))


def detections_from_autoware(msg: Any) -> tuple[Detection, ...]:
    """Autoware DetectedObjects as detections: the most probable classification's label, the existence
    probability as score (the classification's probability when the existence probability is 0)."""
    _ego_frame(msg)
    out = []
    for i, obj in enumerate(msg.objects):
        what = f"objects[{i}]"
        if not obj.classification:
            raise InvalidValueError(f"{what}: no classification present")
        probs = [_probability(c.probability, f"{what}: classification probability") for c in obj.classification]
        best = obj.classification[int(np.argmax(probs))]
        label = int(best.label)
        if not 0 <= label < len(AUTOWARE_LABELS):
            raise InvalidValueError(f"{what}: Autoware label {label} outside 0..{len(AUTOWARE_LABELS) - 1} "
                                    f"({AUTOWARE_LABELS[0]}..{AUTOWARE_LABELS[-1]}): another message version?")
        class_id = AUTOWARE_LABELS[label]
        score = _probability(obj.existence_probability, f"{what}: existence_probability") or max(probs)
        pos = _centre(obj.kinematics.pose_with_covariance.pose)
        dims = obj.shape.dimensions
        box = footprint(pos, float(dims.x), float(dims.y), what)
        out.append(Detection(box, class_id, score, pos))
    return tuple(out)


def _probability(value: float, what: str) -> float:
    """A probability of the message, in [0, 1] (float round-off of 1e-6 clipped); anything else is malformed."""
    p = float(value)
    if not -1e-6 <= p <= 1.0 + 1e-6:  # also refuses NaN
        raise InvalidValueError(f"{what} {p} outside [0, 1]")
    return min(max(p, 0.0), 1.0)


# ---------------------------------------------------------------- writing (tests, users' own recordings)


def _pose(position: tuple[float, float, float]) -> Any:
    return _t("geometry_msgs/msg/Pose")(
        position=_t("geometry_msgs/msg/Point")(x=float(position[0]), y=float(position[1]), z=float(position[2])),
        orientation=_t("geometry_msgs/msg/Quaternion")(x=0.0, y=0.0, z=0.0, w=1.0),
    )


def _detection3d(box: Box, position: tuple[float, float, float], class_id: str, score: float, ident: str,
                 stamp_ns: int, frame_id: str) -> Any:
    hyp = _t("vision_msgs/msg/ObjectHypothesisWithPose")(
        hypothesis=_t("vision_msgs/msg/ObjectHypothesis")(class_id=class_id, score=float(score)),
        pose=_t("geometry_msgs/msg/PoseWithCovariance")(pose=_pose(position), covariance=np.zeros(36)),
    )
    bbox = _t("vision_msgs/msg/BoundingBox3D")(
        center=_pose(position), size=_t("geometry_msgs/msg/Vector3")(x=box.width, y=box.height, z=1.0)
    )
    return _t("vision_msgs/msg/Detection3D")(header=header(stamp_ns, frame_id), results=[hyp], bbox=bbox, id=ident)


def _position_of(d: Detection | GroundTruthObject) -> tuple[float, float, float]:
    if d.position is None:
        raise InvalidValueError(f"{d.class_id}: a 3D object needs a position")
    return d.position


def detections_to_3d_msg(detections: tuple[Detection, ...], stamp_ns: int, frame_id: str = "base_link") -> Any:
    """Detections (with positions) as a vision_msgs/Detection3DArray."""
    dets = [_detection3d(d.box, _position_of(d), d.class_id, d.score, "", stamp_ns, frame_id) for d in detections]
    return _t(DETECTIONS_3D_TYPE)(header=header(stamp_ns, frame_id), detections=dets)


def ground_truth_to_3d_msg(objects: tuple[GroundTruthObject, ...], stamp_ns: int, frame_id: str = "base_link") -> Any:
    """Ground truth (with positions) as a vision_msgs/Detection3DArray, the track id in ``id``."""
    dets = [_detection3d(g.box, _position_of(g), g.class_id, 1.0, g.track_id, stamp_ns, frame_id) for g in objects]
    return _t(DETECTIONS_3D_TYPE)(header=header(stamp_ns, frame_id), detections=dets)


def detections_to_autoware(detections: tuple[Detection, ...], stamp_ns: int, frame_id: str = "base_link") -> Any:
    """Detections (with positions; class names of `AUTOWARE_LABELS`) as Autoware DetectedObjects."""
    vec = _t("geometry_msgs/msg/Vector3")
    objects = []
    for d in detections:
        label = AUTOWARE_LABELS.index(d.class_id) if d.class_id in AUTOWARE_LABELS else 0
        kin = _t("autoware_perception_msgs/msg/DetectedObjectKinematics")(
            pose_with_covariance=_t("geometry_msgs/msg/PoseWithCovariance")(
                pose=_pose(_position_of(d)), covariance=np.zeros(36)
            ),
            has_position_covariance=False,
            orientation_availability=0,
            twist_with_covariance=_t("geometry_msgs/msg/TwistWithCovariance")(
                twist=_t("geometry_msgs/msg/Twist")(linear=vec(x=0.0, y=0.0, z=0.0), angular=vec(x=0.0, y=0.0, z=0.0)),
                covariance=np.zeros(36),
            ),
            has_twist=False,
            has_twist_covariance=False,
        )
        shape = _t("autoware_perception_msgs/msg/Shape")(
            type=0,
            footprint=_t("geometry_msgs/msg/Polygon")(points=[]),
            dimensions=vec(x=d.box.width, y=d.box.height, z=1.0),
        )
        cls = _t("autoware_perception_msgs/msg/ObjectClassification")(label=label, probability=float(d.score))
        objects.append(
            _t("autoware_perception_msgs/msg/DetectedObject")(
                existence_probability=float(d.score), classification=[cls], kinematics=kin, shape=shape
            )
        )
    return _t(AUTOWARE_OBJECTS_TYPE)(header=header(stamp_ns, frame_id), objects=objects)
