"""Shared value types: one `Frame` record flows through bags, episodes, monitors and metrics.

Conventions (DESIGN.md): boxes are pixel coordinates ``(x_min, y_min, x_max, y_max)``,
origin top-left, floats; distances in metres; stamps in integer nanoseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perception_safety.core.camera import Intrinsics


class InvalidValueError(ValueError):
    """A value violates its type's invariant (NaN/inf coordinate, inverted box, ...)."""


_isfinite = math.isfinite


def _require_finite(name: str, *values: float) -> None:
    for v in values:
        if not math.isfinite(v):
            raise InvalidValueError(f"{name}: non-finite value {v!r}")


@dataclass(frozen=True, slots=True)
class Box:
    """Axis-aligned pixel box; ``x_min <= x_max`` and ``y_min <= y_max``, all finite."""

    x_min: float
    y_min: float
    x_max: float
    y_max: float

    def __post_init__(self) -> None:
        x0, y0, x1, y1 = self.x_min, self.y_min, self.x_max, self.y_max
        if x0 <= x1 and y0 <= y1 and _isfinite(x0 + y0 + x1 + y1):
            return  # the common case in one test (a NaN or inf anywhere makes the sum non-finite)
        _require_finite("box", x0, y0, x1, y1)
        if self.x_min > self.x_max or self.y_min > self.y_max:
            raise InvalidValueError(
                f"box: inverted coordinates ({self.x_min}, {self.y_min}, {self.x_max}, {self.y_max})"
            )

    @classmethod
    def from_center(cls, cx: float, cy: float, width: float, height: float) -> Box:
        """Box from centre and size (the vision_msgs/BoundingBox2D layout)."""
        return cls(cx - width / 2.0, cy - height / 2.0, cx + width / 2.0, cy + height / 2.0)

    @property
    def width(self) -> float:
        return self.x_max - self.x_min

    @property
    def height(self) -> float:
        return self.y_max - self.y_min

    @property
    def area(self) -> float:
        return self.width * self.height

    @property
    def center(self) -> tuple[float, float]:
        return ((self.x_min + self.x_max) / 2.0, (self.y_min + self.y_max) / 2.0)

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.x_min, self.y_min, self.x_max, self.y_max)


@dataclass(frozen=True, slots=True)
class Interval:
    """Closed real interval ``[lo, hi]`` with ``lo <= hi`` (BBSL's interval type)."""

    lo: float
    hi: float

    def __post_init__(self) -> None:
        if math.isnan(self.lo) or math.isnan(self.hi):
            raise InvalidValueError(f"interval: NaN bound [{self.lo}, {self.hi}]")
        if self.lo > self.hi:
            raise InvalidValueError(f"interval: lower bound {self.lo} exceeds upper bound {self.hi}")

    @property
    def length(self) -> float:
        return self.hi - self.lo


@dataclass(frozen=True, slots=True)
class Detection:
    """One detector output: a box, a class label and a confidence score in [0, 1].

    ``position`` is the object's centre in the ego frame (m, x forward, y left, z up) when the detector reports
    one (3D object lists); for those the box is the object's bird's-eye-view footprint in metres (docs/objects3d.md).
    """

    box: Box
    class_id: str
    score: float = 1.0
    position: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        if not _isfinite(self.score):
            _require_finite("detection score", self.score)
        if self.position is not None and not _isfinite(sum(self.position)):
            _require_finite("detection position", *self.position)

    @property
    def distance(self) -> float | None:
        """Ground-plane distance of ``position`` from the ego, ``hypot(x, y)`` (None without a position); the
        distance 3D object lists are binned by (as in the nuScenes benchmark)."""
        return None if self.position is None else math.hypot(self.position[0], self.position[1])


@dataclass(frozen=True, slots=True)
class GroundTruthObject:
    """An annotated object: box, class, position in the ego frame (m), distance (m), track id.

    ``ignore``: an ignore region, not an object (KITTI ``DontCare``, COCO ``iscrowd``): detections inside it count
    neither as true nor as false positives (`evaluation.ground_truth_screen`).
    """

    box: Box
    class_id: str
    distance: float
    position: tuple[float, float, float] | None = None
    track_id: str = ""
    ignore: bool = False

    def __post_init__(self) -> None:
        if not _isfinite(self.distance):
            _require_finite("ground-truth distance", self.distance)
        if self.distance < 0:
            raise InvalidValueError(f"ground-truth distance: negative value {self.distance}")
        if self.position is not None and not _isfinite(sum(self.position)):
            _require_finite("ground-truth position", *self.position)

    @classmethod
    def at_position(cls, box: Box, class_id: str, position: Sequence[float], track_id: str = "") -> GroundTruthObject:
        """Ground truth whose distance is the Euclidean norm of its ego-frame position."""
        pos = (float(position[0]), float(position[1]), float(position[2]))
        return cls(box, class_id, math.hypot(*pos), pos, track_id)


@dataclass(frozen=True, slots=True)
class EgoState:
    """Ego vehicle state: planar position (m), heading (rad) and forward speed (m/s)."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    speed: float = 0.0

    def __post_init__(self) -> None:
        if not _isfinite(self.x + self.y + self.yaw + self.speed):
            _require_finite("ego state", self.x, self.y, self.yaw, self.speed)


@dataclass(frozen=True, slots=True)
class Frame:
    """Everything known at one instant. ``image`` is HxWx3 uint8 RGB (or HxW mono) or None.

    ``detections`` is what the detector reports (above its score threshold): every metric and monitor uses
    these. ``candidates`` are its raw boxes *below* the threshold where they were recorded (``None``: not
    recorded); only PCD reads them, as the paper's un-thresholded top-score input (docs/pcd.md).
    ``camera`` is the CameraInfo that came with the image (``None``: none known); camera-relative monitor regions
    are resolved against it (docs/monitors.md, "Regions").
    """

    stamp_ns: int
    detections: tuple[Detection, ...] = ()
    ground_truth: tuple[GroundTruthObject, ...] = ()
    ego: EgoState | None = None
    image: np.ndarray | None = field(default=None, compare=False, repr=False)
    frame_id: str = ""
    candidates: tuple[Detection, ...] | None = None
    episode: str = ""
    """The independent unit the frame belongs to (a bag, its ``perception_safety.episode``, a dataset's episode
    key); ``""`` = not known. Cluster-aware intervals group frames by it (evaluation/clustered.py)."""
    camera: Intrinsics | None = field(default=None, compare=False)

    def detection_boxes(self) -> np.ndarray:
        """Detections' boxes as an ``(n, 4)`` float64 array."""
        return boxes_to_array([d.box for d in self.detections])

    def ground_truth_boxes(self) -> np.ndarray:
        """Ground-truth boxes as an ``(m, 4)`` float64 array."""
        return boxes_to_array([g.box for g in self.ground_truth])


def boxes_to_array(boxes: Sequence[Box]) -> np.ndarray:
    """Stack boxes into an ``(n, 4)`` float64 array (``(0, 4)`` when empty)."""
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([b.as_tuple() for b in boxes], dtype=np.float64)


# Hot-path constructors (issue 27): the bag readers build ~10^5 boxes, detections and objects per 10^4 frames, and
# a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` before ``__post_init__`` checks
# it. Each function below is its class called with the same arguments (same value, same error): when the class's
# invariant holds (tested as its ``__post_init__`` tests it) the fields are set through their slots directly,
# else the class itself is called and raises.
_new = object.__new__


def _setters(cls: type, names: str) -> tuple:
    return tuple(getattr(cls, name).__set__ for name in names.split())


_BOX = _setters(Box, "x_min y_min x_max y_max")
_DETECTION = _setters(Detection, "box class_id score position")
_GROUND_TRUTH = _setters(GroundTruthObject, "box class_id distance position track_id ignore")


def make_box(x_min: float, y_min: float, x_max: float, y_max: float) -> Box:
    """``Box(x_min, y_min, x_max, y_max)``."""
    if x_min <= x_max and y_min <= y_max and _isfinite(x_min + y_min + x_max + y_max):
        b = _new(Box)
        s0, s1, s2, s3 = _BOX
        s0(b, x_min), s1(b, y_min), s2(b, x_max), s3(b, y_max)
        return b
    return Box(x_min, y_min, x_max, y_max)


def make_box_from_center(cx: float, cy: float, width: float, height: float) -> Box:
    """``Box.from_center(cx, cy, width, height)``."""
    return make_box(cx - width / 2.0, cy - height / 2.0, cx + width / 2.0, cy + height / 2.0)


def make_detection(box: Box, class_id: str, score: float = 1.0) -> Detection:
    """``Detection(box, class_id, score)`` (no position: image detections)."""
    if not _isfinite(score):
        return Detection(box, class_id, score)
    d = _new(Detection)
    s0, s1, s2, s3 = _DETECTION
    s0(d, box), s1(d, class_id), s2(d, score), s3(d, None)
    return d


def make_ground_truth(box: Box, class_id: str, distance: float, position: tuple[float, float, float] | None = None,
                      track_id: str = "", ignore: bool = False) -> GroundTruthObject:
    """``GroundTruthObject(box, class_id, distance, position, track_id, ignore)``."""
    if not (_isfinite(distance) and distance >= 0 and (position is None or _isfinite(sum(position)))):
        return GroundTruthObject(box, class_id, distance, position, track_id, ignore)
    g = _new(GroundTruthObject)
    s0, s1, s2, s3, s4, s5 = _GROUND_TRUTH
    s0(g, box), s1(g, class_id), s2(g, distance), s3(g, position), s4(g, track_id), s5(g, ignore)
    return g


_FRAME = _setters(Frame, "stamp_ns detections ground_truth ego image frame_id candidates episode camera")


def make_frame(stamp_ns: int, detections: tuple[Detection, ...] = (), ground_truth: tuple[GroundTruthObject, ...] = (),
               ego: EgoState | None = None, image: np.ndarray | None = None, frame_id: str = "",
               candidates: tuple[Detection, ...] | None = None, episode: str = "",
               camera: Intrinsics | None = None) -> Frame:
    """``Frame(...)`` with the same arguments (a frame checks nothing itself: every field set through its slot)."""
    f = _new(Frame)
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = _FRAME
    s0(f, stamp_ns), s1(f, detections), s2(f, ground_truth), s3(f, ego), s4(f, image), s5(f, frame_id)
    s6(f, candidates), s7(f, episode), s8(f, camera)
    return f
