"""Perception Characteristics Distance (PCD paper): PCD, mPCD and variance change points.

`samples` turns frames or a CSV into (distance, y) samples, `pspline` fits the P-spline mean, `logistic` the
detection probability of the hurdle model, `changepoints` finds variance change points (SIC, binary
segmentation), `compute` combines them into P(y > y_t | x), PCD over the (y_t, p_t) grid and mPCD,
`diagnostics` raises the warnings, `bootstrap` adds intervals, `synthetic` makes known-answer data.
"""

from perception_safety.evaluation.pcd.bootstrap import bootstrap_pcd
from perception_safety.evaluation.pcd.compute import PCDConfig, PCDError, PCDResult, compute_pcd, pcd_at
from perception_safety.evaluation.pcd.samples import PCDSamples, read_samples_csv, samples_from_frames

__all__ = [
    "PCDConfig",
    "PCDError",
    "PCDResult",
    "PCDSamples",
    "bootstrap_pcd",
    "compute_pcd",
    "pcd_at",
    "read_samples_csv",
    "samples_from_frames",
]
