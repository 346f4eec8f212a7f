"""The safety monitor's ``~/overlay`` topic: `report.overlay.draw_overlay` of processed frames, rate-limited.

Off by default (drawing a 1280x720 frame costs a few ms; a viewer rarely needs more than a few frames per
second). A frame without an image is not drawn. A drawing failure is logged and never affects monitoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.core.types import Frame
from perception_safety.monitors.base import MonitorResult
from perception_safety.monitors.config import MonitorsConfig


class OverlayParams(BaseModel):
    """``overlay.*`` parameters of the safety monitor."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="publish ~/overlay (sensor_msgs/Image, rgb8)")
    max_rate_hz: float = Field(default=5.0, gt=0.0, le=120.0, description="at most this many overlay images per s")


class OverlayPublisher:
    """Draws and publishes at most ``max_rate_hz`` overlays per second (by frame stamp: replays are not limited by
    wall time but by the recording's)."""

    def __init__(self, node: Any, topic: str, params: OverlayParams, qos: Any) -> None:
        from sensor_msgs.msg import Image

        self.params = params
        self.node = node
        self.pub = node.create_publisher(Image, topic, qos) if params.enabled else None
        self.last_stamp: int | None = None
        self.published = 0

    def maybe_publish(self, frame: Frame, results: Sequence[MonitorResult], stop: bool, config: MonitorsConfig,
                      plausibility: object | None) -> bool:
        """Publish the overlay of ``frame`` if enabled, it has an image and the rate allows; True when published."""
        if self.pub is None or frame.image is None:
            return False
        period = round(1e9 / self.params.max_rate_hz)
        if self.last_stamp is not None and 0 <= frame.stamp_ns - self.last_stamp < period:
            return False
        try:
            from perception_safety.report.overlay import draw_overlay, state_of
            from perception_safety.ros import convert

            state = state_of(plausibility) if plausibility is not None else None
            img = draw_overlay(frame, results, config, state, stop)
            self.pub.publish(convert.image_msg(img, frame.stamp_ns, frame.frame_id or "camera"))
        except Exception as exc:  # the overlay is a view: never let it disturb monitoring
            self.node.get_logger().error(f"overlay failed: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)
            return False
        self.last_stamp = frame.stamp_ns
        self.published += 1
        return True
