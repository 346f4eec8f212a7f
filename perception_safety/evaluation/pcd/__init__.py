"""Perception Characteristics Distance (PCD paper): PCD, mPCD and variance change points.

`samples` turns frames or a CSV into (distance, y) samples, `pspline` fits the P-spline mean, `logistic` the
detection probability of the hurdle model, `changepoints` finds variance change points (SIC, binary
segmentation), `compute` combines them into P(y > y_t | x), PCD over the (y_t, p_t) grid and mPCD,
`diagnostics` raises the warnings, `bootstrap` adds intervals, `synthetic` makes known-answer data.
"""

from typing import TYPE_CHECKING

from perception_safety.lazy_exports import lazy_exports

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

# Each name loads its own module on first use: reading samples does not load the fit (scipy.interpolate).
__getattr__ = lazy_exports(
    __name__,
    {
        "PCDConfig": "config",
        "PCDError": "errors",
        "PCDResult": "result",
        "PCDSamples": "samples",
        "bootstrap_pcd": "bootstrap",
        "compute_pcd": "compute",
        "pcd_at": "grid",
        "read_samples_csv": "samples",
        "samples_from_frames": "samples",
    },
)

if TYPE_CHECKING:
    from perception_safety.evaluation.pcd.bootstrap import bootstrap_pcd
    from perception_safety.evaluation.pcd.config import PCDConfig
    from perception_safety.evaluation.pcd.errors import PCDError
    from perception_safety.evaluation.pcd.grid import pcd_at
    from perception_safety.evaluation.pcd.result import PCDResult
    from perception_safety.evaluation.pcd.samples import PCDSamples, read_samples_csv, samples_from_frames
