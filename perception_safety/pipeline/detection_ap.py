"""AP in the evaluate map/reduce: the records of one unit's frames (map) and their concatenation (reduce).

The independent unit of the AP bootstrap is the frame's episode (`Frame.episode`: a dataset's episode key, or
``path#frame`` for its lines without one, which are independent images); a frame that carries none counts as its
episode of the per-input pass (a bag is one recording). A false detection's distance comes from
`detection_distances`, the one estimate shared with the per-bin precision (docs/detection-ap.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.ground_distance import detection_distances
from perception_safety.evaluation.detection_ap.batch import records_from_batch
from perception_safety.evaluation.detection_ap.records import APRecords, merge_records
from perception_safety.pipeline.evaluate_config import EvaluateConfig


def ap_partial(batch: FrameBatch, cfg: EvaluateConfig) -> dict[str, Any]:
    """The AP records of an episode's columnar batch (its frames' episodes filled in) as JSON: the records
    `records_from_frames` gives for the same frames, from the batch the confusion matrices use; a detection's
    distance is the estimate of the precision per bin (`detection_distances`: a carried 3D position, else
    ``confusion.ground_camera``)."""
    assert batch.det_distances is not None
    distances = detection_distances(batch.det_distances, batch.det_boxes[:, 3], cfg.confusion.ground_camera)
    c = cfg.confusion
    return records_from_batch(batch, c.class_names, c.bin_edges, distances, cfg.detection_ap.max_detections).to_json()


def reduce_ap(partials: Sequence[dict[str, Any]]) -> APRecords | None:
    """All partials' records in input order (None when no partial carries any)."""
    return merge_records([_records(p["detection_ap"]) for p in partials if "detection_ap" in p])


def _records(d: dict[str, Any]) -> APRecords:
    """`APRecords.from_json`, the TP/FP masks taken as read (`pipeline.partials` gives them as arrays: one
    ``tolist`` each instead of a copy per detection)."""
    rec = APRecords.from_json({**d, "tp": [], "fp": []})
    rec.tp, rec.fp = (m.tolist() if isinstance(m, np.ndarray) else list(m) for m in (d["tp"], d["fp"]))
    return rec
