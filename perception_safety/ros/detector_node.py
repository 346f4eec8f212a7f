"""``detector`` node: camera image -> a `Detector` (ONNX Runtime model or OpenCV HOG) -> vision_msgs/Detection2DArray.

The detections carry the image's header (stamp and frame id), so the ``safety_monitor`` pairs them with the same
image by exact stamp. A frame the detector cannot handle (undecodable image, an output that does not match the
model's YAML) is skipped and reported on ``/diagnostics``; the node never dies on input. A frame whose model outputs
are NaN/inf is an error frame: nothing is published for it (never a Detection2DArray claiming an empty road), the
non-finite values are counted and ``/diagnostics`` says ERROR. A model that cannot be
loaded or whose declared shapes contradict its YAML stops the node at start (exit 2, the YAML file and key).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from perception_safety.detectors import DetectorConfig, DetectorError, build_detector
from perception_safety.detectors.base import NonFiniteOutputError
from perception_safety.monitors.base import Level
from perception_safety.ros import convert, transport
from perception_safety.ros.diagnostics import InputHealth
from perception_safety.ros.liveness import Liveness
from perception_safety.ros.params import MAX_TIMEOUT_S, MIN_DIAGNOSTICS_PERIOD_S, StrictParams
from perception_safety.ros.runner import publish_period_diagnostics, run_node

NODE_NAME = "detector"


_Strict = StrictParams


class Topics(_Strict):
    image: str = "/camera/image_raw"
    detections: str = "/detections"
    diagnostics: str = "/diagnostics"


class QosParams(_Strict):
    """Input: sensor data, keep the latest frame only (a slow detector skips frames instead of lagging)."""

    input_depth: int = Field(default=1, ge=1, le=1000)
    reliable_inputs: bool = False
    output_depth: int = Field(default=10, ge=1, le=1000)


class DetectorNodeParams(_Strict):
    """Parameters (``config/detector.yaml``); topics, qos and the detector itself are read-only."""

    topics: Topics = Topics()
    qos: QosParams = QosParams()
    detector: DetectorConfig = DetectorConfig()
    frame_id: str = Field(default="", description="frame id of the detections; empty: the image's")
    stale_timeout_s: float = Field(default=1.0, gt=0.0, le=MAX_TIMEOUT_S)
    stale_level: Literal["stale", "error"] = "stale"
    diagnostics_period_s: float = Field(default=1.0, ge=MIN_DIAGNOSTICS_PERIOD_S, le=MAX_TIMEOUT_S)
    hardware_id: str = "camera"


READ_ONLY = ("topics", "qos", "detector")


def _resolved(cfg: DetectorConfig) -> DetectorConfig:
    """The detector config with ``onnx_model`` looked up in the working directory, then the package share."""
    if cfg.onnx_model is None:
        return cfg
    from perception_safety.io.paths import resolve_file

    return cfg.model_copy(update={"onnx_model": resolve_file(str(cfg.onnx_model), "detector.onnx_model")})


def make_node(name: str = NODE_NAME) -> Any:
    """Create the rclpy node (model loaded and checked; errors raise a `PerceptionSafetyError`)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.ros.params import NodeParams
    from perception_safety.ros.qos import input_qos, output_qos

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__(name)
            self.params = NodeParams(self, DetectorNodeParams, READ_ONLY, on_change=self._reconfigure)
            p = self.params.config
            self.detector = build_detector(_resolved(p.detector))
            self.prefix = f"{self.get_name()}: "
            now = self._now()
            self.health = InputHealth(int(p.stale_timeout_s * 1e9), p.stale_level, started_ns=now)
            self.liveness = Liveness(int(p.stale_timeout_s * 1e9), int(2 * p.stale_timeout_s * 1e9), started_ns=now,
                                     stale_level=self.health.stale_as)
            self.transport = transport.describe()
            self.detections_out = 0
            self.nonfinite_frames = self.nonfinite_values = 0
            self.error = ""  # the last error frame's reason while it is the latest frame or in this period
            self.error_in_period = False
            sub = self.create_subscription(Image, p.topics.image, self._on_image,
                                           input_qos(p.qos.input_depth, p.qos.reliable_inputs), raw=True)
            self.image_topic = sub.topic_name
            qout = output_qos(p.qos.output_depth)
            self.pub_det = self.create_publisher(Detection2DArray, p.topics.detections, qout)
            self.pub_diag = self.create_publisher(DiagnosticArray, p.topics.diagnostics, qout)
            self.timer = self.create_timer(p.diagnostics_period_s, self._on_timer)
            self.get_logger().info(f"{self.detector.name}: {self.image_topic} -> {self.pub_det.topic_name}")

        def _now(self) -> int:
            return self.get_clock().now().nanoseconds

        def _reconfigure(self, p: DetectorNodeParams) -> None:
            self.health.stale_timeout_ns = self.liveness.warn_after_ns = int(p.stale_timeout_s * 1e9)
            self.liveness.error_after_ns = int(2 * p.stale_timeout_s * 1e9)
            self.health.stale_level = p.stale_level
            self.timer.timer_period_ns = int(p.diagnostics_period_s * 1e9)

        def _on_image(self, raw: bytes) -> None:
            try:
                now = self._now()
                self.health.received(now)
                self.liveness.input(self.image_topic, now)
                msg = convert.decode_cdr(raw, "sensor_msgs/msg/Image", self.image_topic)
                image = convert.image_from_msg(msg, self.image_topic)
                dets = self.detector.detect(image)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                frame_id = self.params.config.frame_id or str(msg.header.frame_id)
                self.pub_det.publish(convert.detection_array_msg(dets, stamp, frame_id))
            except NonFiniteOutputError as exc:
                self._error_frame(exc)
                return
            except (convert.MessageError, DetectorError) as exc:
                self._reject(str(exc))
                return
            except Exception as exc:  # the node never dies on input
                self._reject(f"{self.image_topic}: internal error: {type(exc).__name__}: {exc}")
                return
            self.health.processed()
            self.liveness.frame(self._now())
            self.detections_out += len(dets)
            if self.error and not self.error_in_period:
                self.error = ""

        def _error_frame(self, exc: NonFiniteOutputError) -> None:
            """Non-finite outputs: no detections published; ERROR on /diagnostics at once; counted."""
            self.nonfinite_frames += 1
            self.nonfinite_values += exc.values
            self.error, self.error_in_period = str(exc), True
            self.get_logger().error(f"error frame: {exc}", throttle_duration_sec=1.0)
            self._publish_diagnostics()

        def _reject(self, reason: str) -> None:
            self.health.reject(self.image_topic, reason)
            self.get_logger().warning(f"skipped frame: {reason}", throttle_duration_sec=1.0)
            self._publish_diagnostics()

        def _publish_diagnostics(self) -> None:
            now = self._now()
            hw = self.params.config.hardware_id
            level, message = self.health.level_message(now)
            live = self.liveness.state(now)
            if level == Level.OK and live.level != Level.OK:
                level = Level.WARN if live.level in (Level.WARN, Level.ERROR) else Level.STALE
                message = f"receiving, but {live.message}"
            if self.error:
                level, message = Level.ERROR, f"error frame (nothing published for it): {self.error}"
            values = {**self.health.values(), **live.values, "detections_published": self.detections_out,
                      "nonfinite_frames": self.nonfinite_frames, "nonfinite_values": self.nonfinite_values,
                      "detector": self.detector.name, **self.transport}
            st = convert.status(f"{self.prefix}detector", level, message, values, hw)
            self.pub_diag.publish(convert.diagnostic_array_msg([st], now))

        def _on_timer(self) -> None:
            publish_period_diagnostics(self)
            self.error_in_period = False

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``detector``."""
    return run_node(make_node, args)


if __name__ == "__main__":
    import sys

    sys.exit(main())
