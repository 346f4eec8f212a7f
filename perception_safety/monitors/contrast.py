"""Contrast monitor of the SG/RH/AC paper's CARLA use case (Section III-B, monitor module 1).

Default statistic (the paper's public code, DESIGN.md): 8-bit luma ``L = 0.299R + 0.587G + 0.114B``,
``C = mean over rows of the variance along each row``; alarm when ``C < 1580`` (1280x720).
Computed at full resolution in three vectorised passes (luma, row sums, global sum of squares):
``C = sum(L^2)/(H W) - mean_r (S_r / W)^2`` with ``S_r`` the row sums, which equals
``mean_r var_r`` exactly because the mean of the per-row second moments is the global second moment.
"""

from __future__ import annotations

import cv2
import numpy as np

from perception_safety.core.types import Frame
from perception_safety.errors import PerceptionSafetyError
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import ContrastConfig, Region
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError, rect_pixels


class MonitorInputError(PerceptionSafetyError):
    """A frame handed to a monitor is unusable (wrong image dtype or shape, empty region)."""


def luma8(image: np.ndarray) -> np.ndarray:
    """8-bit luma ``round(0.299R + 0.587G + 0.114B)`` of an HxWx3 RGB (or HxWx4 RGBA, or HxW mono) uint8 image.

    OpenCV's fixed-point conversion (the public code's): it differs from the rounded real formula by one level on
    22 411 of the 2^24 colours (measured), so the statistic is defined by this function, not by the formula.
    """
    if image.dtype != np.uint8:
        raise MonitorInputError(f"contrast: image must be uint8, got {image.dtype}")
    if image.ndim == 2:
        return image
    if image.ndim == 3 and image.shape[2] == 3:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if image.ndim == 3 and image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_RGBA2GRAY)
    raise MonitorInputError(f"contrast: image must be HxW, HxWx3 or HxWx4, got shape {image.shape}")


def crop(image: np.ndarray, roi: Region | None) -> np.ndarray:
    """View of ``image`` inside ``roi`` (clipped to the image); `RegionError` when the roi misses the image (or is
    a pixel roi drawn for another image size)."""
    if roi is None:
        return image
    h, w = image.shape[:2]
    x0, y0, x1, y1 = rect_pixels("contrast.roi", roi, CameraInUse((w, h)))
    c0, r0 = max(0, round(x0)), max(0, round(y0))
    c1, r1 = min(w, round(x1)), min(h, round(y1))
    if c1 <= c0 or r1 <= r0:
        raise RegionError(f"contrast.roi: {roi.describe()} covers no whole pixel of the {w}x{h} image")
    return image[r0:r1, c0:c1]


def row_variance_statistic(gray: np.ndarray) -> float:
    """Mean over rows of the per-row (population) variance of a 2-D uint8 array (DESIGN.md contrast statistic)."""
    h, w = gray.shape
    row_sums = cv2.reduce(gray, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).astype(np.float64).ravel()
    sum_sq = cv2.norm(gray, cv2.NORM_L2SQR)  # exact integer sum of squares for 8-bit input
    row_means = row_sums / w
    return float(sum_sq / (h * w) - np.dot(row_means, row_means) / h)


def rms_contrast(gray: np.ndarray) -> float:
    """RMS contrast: standard deviation of the luma scaled to [0, 1] over the whole region."""
    _, std = cv2.meanStdDev(gray)
    return float(std[0, 0]) / 255.0


def michelson_contrast(gray: np.ndarray, percentiles: tuple[float, float] = (1.0, 99.0)) -> float:
    """Michelson contrast ``(Lmax - Lmin) / (Lmax + Lmin)`` with Lmin/Lmax the given luma percentiles."""
    hist = cv2.calcHist([gray], [0], None, [256], [0, 256]).ravel()
    cdf = np.cumsum(hist)
    total = cdf[-1]
    # lo: first level whose cumulative count exceeds the lower quantile (p=0 gives the minimum);
    # hi: first level whose cumulative count reaches the upper quantile (p=100 gives the maximum)
    lo = float(np.searchsorted(cdf, total * percentiles[0] / 100.0, side="right"))
    hi = float(np.searchsorted(cdf, total * percentiles[1] / 100.0, side="left"))
    lo, hi = min(lo, 255.0), min(hi, 255.0)
    return 0.0 if hi + lo == 0 else (hi - lo) / (hi + lo)


def contrast_statistic(image: np.ndarray, config: ContrastConfig) -> float:
    """The configured statistic of ``image`` (inside the optional roi)."""
    gray = luma8(crop(image, config.roi))
    if config.statistic == "row_variance":
        return row_variance_statistic(gray)
    if config.statistic == "rms":
        return rms_contrast(gray)
    return michelson_contrast(gray, config.michelson_percentiles)


class ContrastMonitor:
    """Alarm when the image contrast statistic is below the threshold; stateless, so ``reset`` does nothing."""

    def __init__(self, config: ContrastConfig | None = None, name: str = "contrast") -> None:
        self.config = config or ContrastConfig()
        self.name = name
        self.threshold = self.config.effective_threshold

    def update(self, frame: Frame) -> MonitorResult:
        """Judge one frame; a frame without image gives level STALE (alarm per ``alarm_on_missing_image``)."""
        if frame.image is None:
            alarm = self.config.alarm_on_missing_image
            return MonitorResult(self.name, alarm, Level.STALE, ("no image",), {"threshold": self.threshold})
        value = contrast_statistic(frame.image, self.config)
        values = {"statistic": value, "threshold": self.threshold}
        if value < self.threshold:
            reason = f"{self.config.statistic} contrast {value:.4g} below threshold {self.threshold:.4g}"
            return MonitorResult(self.name, True, Level.ERROR, (reason,), values)
        return MonitorResult(self.name, False, Level.OK, (), values)

    def reset(self) -> None:
        """Nothing to forget: the contrast monitor has no state."""
