"""Shared value types, IoU and detection-to-ground-truth matching (no ROS, no I/O)."""

from perception_safety.core.iou import box_areas, iou_matrix, iou_pairs
from perception_safety.core.matching import Matching, match_boxes, match_frame
from perception_safety.core.types import (
    Box,
    Detection,
    EgoState,
    Frame,
    GroundTruthObject,
    Interval,
    InvalidValueError,
    boxes_to_array,
)

__all__ = [
    "Box",
    "Detection",
    "EgoState",
    "Frame",
    "GroundTruthObject",
    "Interval",
    "InvalidValueError",
    "Matching",
    "box_areas",
    "boxes_to_array",
    "iou_matrix",
    "iou_pairs",
    "match_boxes",
    "match_frame",
]
