"""COCO-style detection AP (IoU 0.50:0.05:0.95, 101-point interpolation), AP50, AP75, per class, pooled and per
distance bin, with episode-bootstrap intervals: `matching` (the per-image rule, crowd regions, max detections),
`precision` (interpolated precision), `records` (mergeable per-detection outcomes), `compute` (the table),
`frames` (records from `Frame`s).
"""

from perception_safety.evaluation.detection_ap.compute import ap_results
from perception_safety.evaluation.detection_ap.matching import IOU_THRESHOLDS, RECALL_POINTS, match_image
from perception_safety.evaluation.detection_ap.records import APRecords, merge_records

__all__ = ["IOU_THRESHOLDS", "RECALL_POINTS", "APRecords", "ap_results", "match_image", "merge_records"]
