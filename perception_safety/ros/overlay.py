"""The safety monitor's ``~/overlay`` topics, rate-limited: the drawn picture (`report.overlay.draw_overlay`,
``sensor_msgs/Image``) and the same content as viewer annotations (`ros.annotations`, ``visualization_msgs/
ImageMarker`` on ``~/overlay/markers``) that Foxglove and RViz draw over the camera image themselves.

Off by default in the node's own config (drawing a 1280x720 frame costs a few ms; a viewer rarely needs more than a
few frames per second); on in the shipped online config. With ``ground_truth`` (a ``vision_msgs/Detection2DArray``
topic, e.g. a simulator's or a replayed bag's ``/ground_truth``) the overlay draws the ground truth of the frame's
stamp with missed objects and false detections marked. A frame without an image is not drawn (its markers are
still published). A drawing failure is logged and never affects monitoring.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.core.types import Frame
from perception_safety.monitors.base import MonitorResult
from perception_safety.monitors.config import MonitorsConfig

KEEP_TRUTH = 64
"""Ground-truth messages kept for stamp lookup (a few seconds at camera rate)."""
TRUTH_WAIT_S = 0.3
"""How long (wall time) a drawing waits for its frame's ground truth before it is drawn without."""


class OverlayParams(BaseModel):
    """``overlay.*`` parameters of the safety monitor."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="publish ~/overlay (sensor_msgs/Image, rgb8)")
    max_rate_hz: float = Field(default=5.0, gt=0.0, le=120.0, description="at most this many overlay images per s")
    markers: bool = Field(default=True, description="also publish ~/overlay/markers (visualization_msgs/ImageMarker)")
    ground_truth: str = Field(default="", description="vision_msgs/Detection2DArray topic of the ground truth to "
                              "draw ('' = none)")


def _size(frame: Frame) -> tuple[int, int] | None:
    """(width, height) of the frame's image, else of its CameraInfo; None when neither is known."""
    if frame.image is not None:
        return int(frame.image.shape[1]), int(frame.image.shape[0])
    camera = getattr(frame, "camera", None)
    return tuple(camera.size) if camera is not None else None  # type: ignore[return-value]


class OverlayPublisher:
    """Draws and publishes at most ``max_rate_hz`` overlays per second (by frame stamp: replays are not limited by
    wall time but by the recording's)."""

    def __init__(self, node: Any, topic: str, params: OverlayParams, qos: Any) -> None:
        from sensor_msgs.msg import Image

        self.params = params
        self.node = node
        self.pub = node.create_publisher(Image, topic, qos) if params.enabled else None
        self.pub_markers = None
        if params.enabled and params.markers:
            from visualization_msgs.msg import ImageMarker

            self.pub_markers = node.create_publisher(ImageMarker, topic.rstrip("/") + "/markers", qos)
        self.truth: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        if params.enabled and params.ground_truth:
            from vision_msgs.msg import Detection2DArray

            node.create_subscription(Detection2DArray, params.ground_truth, self._on_truth, qos)
            node.create_timer(TRUTH_WAIT_S / 2, self._flush_stale)
        self.last_stamp: int | None = None
        self.pending: tuple[Any, ...] | None = None
        self.pending_since = 0.0
        self.lock = threading.Lock()
        self.published = 0

    def _on_truth(self, msg: Any) -> None:
        from perception_safety.ros import convert

        try:
            stamp = convert.stamp_to_ns(msg.header.stamp)
            objects = convert.ground_truth_from_msg(msg, "ground_truth")
        except Exception as exc:  # a bad ground-truth message only loses its drawing
            self.node.get_logger().warning(f"overlay: ground truth ignored: {exc}", throttle_duration_sec=5.0)
            return
        with self.lock:
            self.truth[stamp] = objects
            while len(self.truth) > KEEP_TRUTH:
                self.truth.popitem(last=False)
            pending = self.pending if self.pending is not None and self.pending[0].stamp_ns == stamp else None
            if pending is not None:
                self.pending = None
        if pending is not None:
            self._emit(replace(pending[0], ground_truth=objects), *pending[1:])

    def maybe_publish(self, frame: Frame, results: Sequence[MonitorResult], stop: bool, config: MonitorsConfig,
                      plausibility: object | None) -> bool:
        """Publish the overlay (and markers) of ``frame`` if enabled and the rate allows; True when drawn now.

        With a ground-truth topic whose message for this stamp has not arrived yet (topics are not ordered with each
        other), the drawing waits for it, at most `TRUTH_WAIT_S` or until the next drawing is due (then it is drawn
        without ground truth).
        """
        if self.pub is None:
            return False
        from perception_safety.report.overlay import state_of

        period = round(1e9 / self.params.max_rate_hz)
        with self.lock:
            due = self.last_stamp is None or not 0 <= frame.stamp_ns - self.last_stamp < period
            late = self.pending if due else None  # a waiting drawing gives way to the next one due
            if due:
                self.pending = None
                self.last_stamp = frame.stamp_ns
                if not frame.ground_truth and frame.stamp_ns in self.truth:
                    frame = replace(frame, ground_truth=self.truth[frame.stamp_ns])
            state = state_of(plausibility) if due and plausibility is not None else None
            wait = due and bool(self.params.ground_truth) and not frame.ground_truth
            if wait:
                self.pending = (frame, tuple(results), stop, config, state)
                self.pending_since = time.monotonic()
        if late is not None:
            self._emit(*late)
        if not due or wait:
            return False
        return self._emit(frame, results, stop, config, state)

    def _flush_stale(self) -> None:
        """Draw a frame whose ground truth did not come within `TRUTH_WAIT_S` (without it)."""
        with self.lock:
            late = self.pending if self.pending and time.monotonic() - self.pending_since > TRUTH_WAIT_S else None
            if late is not None:
                self.pending = None
        if late is not None:
            self._emit(*late)

    def _emit(self, frame: Frame, results: Sequence[MonitorResult], stop: bool, config: MonitorsConfig,
              state: Any) -> bool:
        """Draw and publish one frame's overlay image and markers."""
        try:
            from perception_safety.report.overlay import draw_overlay
            from perception_safety.ros import convert

            frame_id = frame.frame_id or "camera"
            size = _size(frame)
            if self.pub_markers is not None and size is not None:
                from perception_safety.ros.annotations import image_markers

                header = convert.header_msg(frame.stamp_ns, frame_id)
                period = round(1e9 / self.params.max_rate_hz)
                for m in image_markers(frame, results, stop, config, header, size, period):
                    self.pub_markers.publish(m)
            if frame.image is None:
                return False
            img = draw_overlay(frame, results, config, state, stop)
            self.pub.publish(convert.image_msg(img, frame.stamp_ns, frame_id))
        except Exception as exc:  # the overlay is a view: never let it disturb monitoring
            self.node.get_logger().error(f"overlay failed: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)
            return False
        self.published += 1
        return True
