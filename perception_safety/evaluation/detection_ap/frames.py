"""AP records from `Frame`s: labels mapped to evaluation classes, each frame one COCO "image".

Which episode a frame belongs to and where an unmatched detection lies are the caller's (``episode_of``,
``detection_distance``): the evaluate pipeline names the bag or the dataset's episode key, and estimates
distances with the confusion analysis' estimator, so AP and precision per bin place a false detection alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.detection_ap.records import APRecords

DistanceFn = Callable[[Frame, np.ndarray], np.ndarray]
"""``(frame, (n, 4) detection boxes) -> (n,)`` distances in metres, NaN where unknown."""


def no_distance(frame: Frame, boxes: np.ndarray) -> np.ndarray:
    """No estimate: unmatched detections count in the pooled AP only."""
    return np.full(len(boxes), np.nan)


def records_from_frames(
    frames: Iterable[Frame],
    config: ConfusionConfig,
    episode_of: Callable[[Frame], str],
    detection_distance: DistanceFn = no_distance,
    max_detections: int = 100,
    records: APRecords | None = None,
) -> APRecords:
    """Add every frame to ``records`` (new ones for ``config``'s classes and bin edges when None)."""
    rec = records or APRecords(config.class_names, tuple(config.bin_edges), max_detections)
    mapper = ClassMapper(config)
    for f in frames:
        det_boxes = f.detection_boxes()
        rec.add_image(
            episode_of(f),
            det_boxes,
            np.array([d.score for d in f.detections], dtype=np.float64),
            np.array([mapper(d.class_id) for d in f.detections], dtype=np.int64),
            np.asarray(detection_distance(f, det_boxes), dtype=np.float64),
            np.array([g.box.as_tuple() for g in f.ground_truth], dtype=np.float64).reshape(-1, 4),
            np.array([mapper(g.class_id) for g in f.ground_truth], dtype=np.int64),
            np.array([g.distance for g in f.ground_truth], dtype=np.float64),
        )
    return rec
