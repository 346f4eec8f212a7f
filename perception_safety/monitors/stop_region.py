"""Emergency-braking rule of the SG/RH/AC paper's CARLA use case (Section III-B).

"The emergency braking system stops the vehicle whenever a pedestrian bounding box overlaps with a
predefined safety-critical region." A plain function (`should_stop`) and the same rule behind the
`Monitor` interface (`StopRegionMonitor`, alarm = stop request).

The same rule as a BBSL specification is `STOP_REGION_BBSL` (bind it with `bbsl_bindings`):
a subject box stops the car when its x- and y-projections overlap the region's. BBSL's overlap is
closed, so a box that only touches the region's edge stops there and not here (a zero-area
difference); ``min_overlap_px > 0`` has no BBSL counterpart.

``rule: corridor`` replaces the image rectangle by a metric corridor on the ground: a box stops the car when its
bottom-centre, back-projected onto flat ground, lies in the corridor (`regions.resolve.Corridor.inside`); ``rule:
either`` stops for both. With ``rule: region`` a configured corridor is what the rectangle must cover on the camera
in use (`regions.coverage.check_covers`): a rectangle that does not is a configuration error, never a silent miss.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perception_safety.core.labels import LabelMatcher
from perception_safety.core.types import Box, Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import CameraMount, StopRegionConfig
from perception_safety.monitors.geometry import intersection_areas
from perception_safety.monitors.regions.coverage import check_covers
from perception_safety.monitors.regions.resolve import (
    CameraInUse,
    Corridor,
    PerCamera,
    Rect,
    RegionError,
    camera_in_use,
    corridor_for,
    rect_pixels,
)

STOP_REGION_BBSL = """\
// Emergency-braking rule of the SG/RH/AC paper's CARLA use case: stop when a pedestrian box
// overlaps the warning region (pixel rectangle, bound as its x and y intervals).
exfunction
    pedestrianExists():bool
    pedestrian():bb
    warningX():interval
    warningY():interval
endexfunction

precondition
    [pedestrianExists() = true]
endprecondition

case stop
    let p : bb = pedestrian(), wx : interval = warningX(), wy : interval = warningY() in
    PROJ_x(p) ≈ wx and PROJ_y(p) ≈ wy
endcase

case NOT stop
    let p : bb = pedestrian(), wx : interval = warningX(), wy : interval = warningY() in
    not (PROJ_x(p) ≈ wx) or not (PROJ_y(p) ≈ wy)
endcase
"""


def bbsl_bindings(config: StopRegionConfig, image_size: tuple[float, float]) -> dict[str, object]:
    """Exfunction bindings of `STOP_REGION_BBSL` for ``config`` on images of ``image_size`` (config-style values of
    the BBSL loader); `RegionError` for the corridor rule (no BBSL form) or a region that misses the image."""
    if not config.uses_region:
        raise RegionError("stop_region: the metric corridor rule has no BBSL form (STOP_REGION_BBSL binds an image "
                          "rectangle); give stop_region.rule: region or either (its rectangle) for BBSL checks")
    size = (round(image_size[0]), round(image_size[1]))
    x0, y0, x1, y1 = rect_pixels("stop_region.region", config.region, CameraInUse(size))
    return {"pedestrianExists": "subject_exists", "pedestrian": "subject", "warningX": [x0, x1], "warningY": [y0, y1]}


@functools.lru_cache(maxsize=16)
def _matcher(patterns: tuple[str, ...]) -> LabelMatcher:
    """One matcher per watched-class list (built once, not per frame: ~20 % of the stop rule's time)."""
    return LabelMatcher(patterns)


def _watched(classes: Sequence[str], scores: Sequence[float] | np.ndarray, config: StopRegionConfig) -> np.ndarray:
    match = _matcher(tuple(config.watched_classes))
    known = {c: match(c) for c in set(classes)}  # a few distinct labels among many boxes
    watched = np.fromiter(map(known.__getitem__, classes), dtype=bool, count=len(classes))
    return watched & (np.asarray(scores, dtype=np.float64) >= config.min_score)


def overlapping(
    boxes: np.ndarray,
    classes: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    config: StopRegionConfig,
    rect: tuple[float, float, float, float],
) -> np.ndarray:
    """Indices of the watched boxes (score >= min_score) whose overlap with the pixel rectangle ``rect`` (the
    region resolved for the image, `rect_pixels`) exceeds ``min_overlap_px``."""
    if boxes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    area = intersection_areas(boxes, rect)
    return np.flatnonzero(_watched(classes, scores, config) & (area > config.min_overlap_px))


def should_stop(
    boxes: Iterable[Box], classes: Sequence[str], scores: Sequence[float], config: StopRegionConfig,
    image_size: tuple[int, int],
) -> bool:
    """The braking decision (``rule: region``) for one frame's boxes on an image of ``image_size``."""
    arr = np.array([b.as_tuple() for b in boxes], dtype=np.float64).reshape(-1, 4)
    rect = rect_pixels("stop_region.region", config.region, CameraInUse(image_size))
    return overlapping(arr, classes, scores, config, rect).size > 0


@dataclass(frozen=True)
class StopGeometry:
    """The stop rule placed on one camera: the pixel rectangle and/or the projected corridor that stop the car."""

    rect: Rect | None = None
    corridor: Corridor | None = None


def stop_geometry(config: StopRegionConfig, mount: CameraMount, camera: CameraInUse) -> StopGeometry:
    """``config``'s rule placed on ``camera``; `RegionError` when it cannot be (a rectangle that misses the image or
    does not cover its configured corridor, a corridor without camera model or mounting, or out of sight)."""
    rect = corridor = None
    if config.uses_region:
        rect = rect_pixels("stop_region.region", config.region, camera)
        if config.rule == "region" and config.corridor is not None:
            check_covers("stop_region.region", config.region, rect, config.corridor, camera, mount)
    if config.uses_corridor:
        assert config.corridor is not None
        corridor = corridor_for("stop_region.corridor", config.corridor, camera, mount)
    return StopGeometry(rect, corridor)


WHERE = ("", "stands in the ground corridor", "overlaps the stop region")
"""Why a box stops the car (`StopJudgement.where` codes: 0 it does not, 1 corridor, 2 rectangle)."""


@dataclass(frozen=True)
class StopBoxes:
    """The boxes the rule reads from many frames, flattened: frame ``f`` owns rows ``offsets[f]:offsets[f + 1]``."""

    offsets: np.ndarray
    boxes: np.ndarray
    classes: list[str]
    scores: np.ndarray

    @classmethod
    def of(cls, frames: Sequence[Frame], source: str) -> StopBoxes:
        """The detections (``source`` detections) or the ground truth (score 1) of ``frames``, in frame order."""
        truth = source == "ground_truth"
        per_frame = [f.ground_truth if truth else f.detections for f in frames]
        flat = [o for objs in per_frame for o in objs]
        boxes = np.array([o.box.as_tuple() for o in flat], dtype=np.float64).reshape(-1, 4)
        scores = np.ones(len(flat)) if truth else np.fromiter((o.score for o in flat), np.float64, len(flat))
        offsets = np.zeros(len(frames) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, per_frame), np.int64, len(frames)), out=offsets[1:])
        return cls(offsets, boxes, [o.class_id for o in flat], scores)

    @property
    def frame(self) -> np.ndarray:
        """Index of each box's frame."""
        return np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))


@dataclass(frozen=True)
class StopJudgement:
    """The rule on many frames: per box why it stops the car (`WHERE` codes), per frame the stop request and the
    corridor's far edge (NaN: no corridor). ``error``: why the frame after the judged ones could not be judged
    (its camera cannot carry the rule, `stop_geometry`); the frames after it were not looked at."""

    boxes: StopBoxes
    where: np.ndarray
    alarm: np.ndarray
    far_m: np.ndarray
    error: RegionError | None = None

    @property
    def frames(self) -> int:
        """Frames judged (all of them unless ``error``)."""
        return len(self.alarm)


class StopRegionMonitor:
    """The braking rule as a stateless monitor; ``alarm`` is the stop request.

    ``config.source`` chooses the frame's detections (the perception ``f``) or its ground truth (``f*``). The
    rule is placed on each frame's camera (`camera_in_use`, `stop_geometry`): one that cannot be placed raises
    `RegionError` (the caller decides: a node fails safe, the offline command exits 2). One implementation for
    one frame (`update`, online) and many (`judge`, offline: one numpy pass over an episode's boxes).
    """

    def __init__(self, config: StopRegionConfig | None = None, camera: CameraMount | None = None,
                 name: str = "stop_region") -> None:
        self.config = config or StopRegionConfig()
        self.camera = camera or CameraMount()
        self.name = name
        self.geometry: PerCamera[StopGeometry] = PerCamera(lambda cam: stop_geometry(self.config, self.camera, cam))

    def _geometries(self, frames: Sequence[Frame]) -> tuple[list[StopGeometry], RegionError | None]:
        """The rule placed on each frame's camera, up to the first frame where it cannot be (and why)."""
        out: list[StopGeometry] = []
        last: tuple[Any, ...] = ()
        for f in frames:
            key = (f.camera, None if f.image is None else f.image.shape)
            if key != last or not out:  # consecutive frames of one camera: placed once
                try:
                    geometry = self.geometry.get(camera_in_use(f, self.camera))
                except RegionError as exc:
                    return out, exc
                last = key
            out.append(geometry)
        return out, None

    def judge(self, frames: Sequence[Frame]) -> StopJudgement:
        """The stop request of every frame (in order, up to the first one whose camera cannot carry the rule)."""
        geometries, error = self._geometries(frames)
        n = len(geometries)
        frames = frames[:n]
        boxes = StopBoxes.of(frames, self.config.source)
        box_frame = boxes.frame if n > 1 else np.zeros(len(boxes.classes), dtype=np.int64)
        watched = _watched(boxes.classes, boxes.scores, self.config)
        where = np.zeros(len(boxes.classes), dtype=np.int8)
        far_m = np.full(n, np.nan)
        distinct = {id(g): g for g in geometries}
        which = np.fromiter(map(id, geometries), np.int64, n) if len(distinct) > 1 else None
        for key, geometry in distinct.items():
            on = np.ones(n, dtype=bool) if which is None else which == key
            rows = watched if which is None else watched & on[box_frame]
            if geometry.corridor is not None:
                spec = geometry.corridor.spec
                far_m[on] = [spec.far_at(f.ego.speed if f.ego is not None else None)
                             for f, o in zip(frames, on.tolist(), strict=True) if o]  # fmt: skip
                where[rows & geometry.corridor.inside_to(boxes.boxes, far_m[box_frame])] = 1
            if geometry.rect is not None and rows.any():
                over = rows & (intersection_areas(boxes.boxes, geometry.rect) > self.config.min_overlap_px)
                where[over & (where == 0)] = 2
        hit = where > 0
        alarm = np.bincount(box_frame[hit], minlength=n) > 0 if n > 1 else np.array([hit.any()] * n, dtype=bool)
        return StopJudgement(boxes, where, alarm, far_m, error)

    def update(self, frame: Frame) -> MonitorResult:
        """Stop request for one frame (`judge` of that frame)."""
        j = self.judge((frame,))
        if j.error is not None:
            raise j.error
        hits = np.flatnonzero(j.where)
        values = {"boxes_in_region": float(hits.size)}
        if not np.isnan(j.far_m[0]):
            values["corridor_far_m"] = float(j.far_m[0])
        if hits.size == 0:
            return MonitorResult(self.name, False, Level.OK, (), values)
        reasons = tuple(f"{j.boxes.classes[i]} box {WHERE[j.where[i]]}" for i in hits)
        return MonitorResult(self.name, True, Level.WARN, reasons, values)

    def reset(self) -> None:
        """Nothing to forget: the rule is stateless."""
