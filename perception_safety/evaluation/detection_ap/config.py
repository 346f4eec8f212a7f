"""The ``detection_ap`` config section: the COCO rule's detection cut and the bootstrap of the AP intervals.

Classes (label patterns) and distance bins are the confusion analysis' (``confusion.classes``,
``confusion.bin_edges``), so AP stands beside recall and precision of the same classes and bins.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DetectionAPConfig(BaseModel):
    """AP settings; the IoU thresholds (0.50:0.05:0.95) and the 101 recall points are COCO's and fixed."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    max_detections: int = Field(100, ge=1)
    """Per image and class, only the highest-scoring detections count (COCO: 100)."""
    n_boot: int = Field(200, ge=0, le=100_000)
    """Episode-bootstrap resamples for the AP intervals (0 = no intervals)."""
    level: float = Field(0.95, gt=0.0, lt=1.0)
    """Two-sided level of the percentile intervals."""
    seed: int = 0
    min_ground_truth: int = Field(10, ge=1)
    """A bin with fewer ground-truth objects of a class is flagged as thin."""
