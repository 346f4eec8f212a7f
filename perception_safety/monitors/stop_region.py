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
    watched = np.fromiter((match(c) for c in classes), dtype=bool, count=len(classes))
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


class StopRegionMonitor:
    """The braking rule as a stateless monitor; ``alarm`` is the stop request.

    ``config.source`` chooses the frame's detections (the perception ``f``) or its ground truth (``f*``). The
    rule is placed on each frame's camera (`camera_in_use`, `stop_geometry`): one that cannot be placed raises
    `RegionError` (the caller decides: a node fails safe, the offline command exits 2).
    """

    def __init__(self, config: StopRegionConfig | None = None, camera: CameraMount | None = None,
                 name: str = "stop_region") -> None:
        self.config = config or StopRegionConfig()
        self.camera = camera or CameraMount()
        self.name = name
        self.geometry: PerCamera[StopGeometry] = PerCamera(lambda cam: stop_geometry(self.config, self.camera, cam))

    def update(self, frame: Frame) -> MonitorResult:
        """Stop request for one frame."""
        geometry = self.geometry.get(camera_in_use(frame, self.camera))
        if self.config.source == "ground_truth":
            boxes, classes = frame.ground_truth_boxes(), [g.class_id for g in frame.ground_truth]
            scores = np.ones(len(classes))
        else:
            boxes = frame.detection_boxes()
            classes = [d.class_id for d in frame.detections]
            scores = np.array([d.score for d in frame.detections], dtype=np.float64)
        watched = _watched(classes, scores, self.config)
        where = np.full(len(classes), "", dtype=object)
        values: dict[str, float] = {}
        if geometry.corridor is not None:
            speed = frame.ego.speed if frame.ego is not None else None
            where[watched & geometry.corridor.inside(boxes, speed)] = "stands in the ground corridor"
            values["corridor_far_m"] = geometry.corridor.spec.far_at(speed)
        if geometry.rect is not None and boxes.shape[0]:
            over = watched & (intersection_areas(boxes, geometry.rect) > self.config.min_overlap_px)
            where[over & (where == "")] = "overlaps the stop region"
        hits = np.flatnonzero(where != "")
        values = {"boxes_in_region": float(hits.size), **values}
        if hits.size == 0:
            return MonitorResult(self.name, False, Level.OK, (), values)
        reasons = tuple(f"{classes[i]} box {where[i]}" for i in hits)
        return MonitorResult(self.name, True, Level.WARN, reasons, values)

    def reset(self) -> None:
        """Nothing to forget: the rule is stateless."""
