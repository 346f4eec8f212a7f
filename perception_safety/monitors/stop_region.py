"""Emergency-braking rule of the SG/RH/AC paper's CARLA use case (Section III-B).

"The emergency braking system stops the vehicle whenever a pedestrian bounding box overlaps with a
predefined safety-critical region." A plain function (`should_stop`) and the same rule behind the
`Monitor` interface (`StopRegionMonitor`, alarm = stop request).

The same rule as a BBSL specification is `STOP_REGION_BBSL` (bind it with `bbsl_bindings`):
a subject box stops the car when its x- and y-projections overlap the region's. BBSL's overlap is
closed, so a box that only touches the region's edge stops there and not here (a zero-area
difference); ``min_overlap_px > 0`` has no BBSL counterpart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from perception_safety.core.types import Box, Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import StopRegionConfig
from perception_safety.monitors.geometry import intersection_areas

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


def bbsl_bindings(config: StopRegionConfig) -> dict[str, object]:
    """Exfunction bindings of `STOP_REGION_BBSL` for ``config`` (config-style values of the BBSL loader)."""
    x0, y0, x1, y1 = config.region.as_array()
    return {"pedestrianExists": "subject_exists", "pedestrian": "subject", "warningX": [x0, x1], "warningY": [y0, y1]}


def overlapping(
    boxes: np.ndarray,
    classes: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    config: StopRegionConfig,
) -> np.ndarray:
    """Indices of the watched boxes (score >= min_score) whose overlap with the region exceeds ``min_overlap_px``."""
    if boxes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    watched = np.fromiter((c in config.watched_classes for c in classes), dtype=bool, count=len(classes))
    watched &= np.asarray(scores, dtype=np.float64) >= config.min_score
    area = intersection_areas(boxes, config.region.as_array())
    return np.flatnonzero(watched & (area > config.min_overlap_px))


def should_stop(
    boxes: Iterable[Box], classes: Sequence[str], scores: Sequence[float], config: StopRegionConfig
) -> bool:
    """The braking decision for one frame's boxes: True when any watched box overlaps the region."""
    arr = np.array([b.as_tuple() for b in boxes], dtype=np.float64).reshape(-1, 4)
    return overlapping(arr, classes, scores, config).size > 0


class StopRegionMonitor:
    """The braking rule as a stateless monitor; ``alarm`` is the stop request.

    ``config.source`` chooses the frame's detections (the perception ``f``) or its ground truth (``f*``).
    """

    def __init__(self, config: StopRegionConfig | None = None, name: str = "stop_region") -> None:
        self.config = config or StopRegionConfig()
        self.name = name

    def update(self, frame: Frame) -> MonitorResult:
        """Stop request for one frame."""
        if self.config.source == "ground_truth":
            boxes, classes, scores = frame.ground_truth_boxes(), [g.class_id for g in frame.ground_truth], None
            scores = np.ones(len(classes))
        else:
            boxes = frame.detection_boxes()
            classes = [d.class_id for d in frame.detections]
            scores = np.array([d.score for d in frame.detections], dtype=np.float64)
        hits = overlapping(boxes, classes, scores, self.config)
        values = {"boxes_in_region": float(hits.size)}
        if hits.size == 0:
            return MonitorResult(self.name, False, Level.OK, (), values)
        reasons = tuple(f"{classes[i]} box overlaps the stop region" for i in hits)
        return MonitorResult(self.name, True, Level.WARN, reasons, values)

    def reset(self) -> None:
        """Nothing to forget: the rule is stateless."""
