"""``safety_monitor`` node: camera image + detections -> monitors -> /diagnostics, stop request, per-frame results.

Inputs are raw subscriptions (CDR bytes) deserialized zero-copy with rosbags and converted exactly as the
offline bag reader does, then paired by header stamp (exact, or nearest within ``sync.slop_s``). Each pair
is one `Frame` for the monitors of `perception_safety.monitors` (contrast, plausibility, stop region).
Outputs: ``~/stop_request`` (std_msgs/Bool, every frame), ``~/monitor_results`` (diagnostic_msgs/DiagnosticArray
stamped with the image stamp: one status per monitor member, the combined ``monitor`` (m_f), ``stop_region`` and
a last ``stop_request`` status whose ``alarm`` is the frame's stop decision), and ``/diagnostics``.
"""

from __future__ import annotations

from typing import Any

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.ros import convert, transport
from perception_safety.ros.diagnostics import InputHealth
from perception_safety.ros.limits import check_count
from perception_safety.ros.liveness import Liveness
from perception_safety.ros.memory import keep_frame_buffers
from perception_safety.ros.monitor_suite import Guarded, MonitorSuite, stop_requested
from perception_safety.ros.overlay import OverlayPublisher
from perception_safety.ros.runner import publish_period_diagnostics, run_node
from perception_safety.ros.safety_monitor_params import READ_ONLY, SafetyMonitorParams
from perception_safety.ros.sync import StampPairer

__all__ = ["READ_ONLY", "Guarded", "MonitorSuite", "SafetyMonitorParams", "main", "make_node", "stop_requested"]

NODE_NAME = "safety_monitor"


#: name of the extra status in ``monitor_results`` that carries the frame's stop decision
STOP_STATUS = "stop_request"
#: liveness stop requests are repeated at most this often (ns) while the liveness status is ERROR
LIVENESS_STOP_PERIOD_NS = 100_000_000


def _set_opencv_threads(n: int) -> None:
    """OpenCV's thread pool size for the node process (the contrast monitor's luma conversion).

    Default 1 (no worker pool): the contrast monitor costs 1.7 instead of 2.2 ms CPU per 1080p frame in-process,
    and the second core stays free for the camera driver; in the node the gain was within run-to-run noise
    (docs/performance.md, "ROS nodes"). Results do not depend on it.
    """
    import cv2

    cv2.setNumThreads(n)


def make_node(name: str = NODE_NAME) -> Any:
    """Create the rclpy node (parameters validated; a bad params file raises `ConfigError`)."""
    from rclpy.node import Node
    from std_msgs.msg import Bool

    from perception_safety.ros.params import NodeParams
    from perception_safety.ros.qos import input_qos, output_qos

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__(name)
            self.params = NodeParams(self, SafetyMonitorParams, READ_ONLY, on_change=self._reconfigure)
            p = self.params.config
            if p.keep_frame_buffers:
                keep_frame_buffers()
            _set_opencv_threads(p.opencv_threads)
            self.suite = MonitorSuite(p.monitors)
            self.prefix = f"{self.get_name()}: "
            self.health = InputHealth(int(p.stale_timeout_s * 1e9), p.stale_level, started_ns=self._now())
            self.liveness = Liveness(int(p.stale_timeout_s * 1e9), int(p.liveness.error_after_s * 1e9),
                                     started_ns=self._now(), window_ns=int(p.liveness.rate_window_s * 1e9),
                                     stale_level=self.health.stale_as)
            self.liveness_level = Level.STALE
            self.liveness_stop_ns = 0
            self.transport = transport.describe()
            self.pairer: StampPairer[Any, Any] = StampPairer(round(p.sync.slop_s * 1e9), p.sync.queue_size)
            self.last: dict[str, MonitorResult] = {}
            self.failed: set[str] = set()
            qin = input_qos(p.qos.input_depth, p.qos.reliable_inputs)
            qout = output_qos(p.qos.output_depth)
            from diagnostic_msgs.msg import DiagnosticArray
            from sensor_msgs.msg import CameraInfo, CompressedImage, Image
            from vision_msgs.msg import Detection2DArray

            self.image_topic = self.resolve_topic_name(p.topics.image)
            self.image_type, image_cls, image_name = "sensor_msgs/msg/Image", Image, p.topics.image
            if p.image_transport == "compressed":
                self.image_type, image_cls = "sensor_msgs/msg/CompressedImage", CompressedImage
                image_name = self.image_topic.rstrip("/") + "/compressed"
            self.info_size: tuple[int, int] | None = None
            if p.use_image:
                sub = self.create_subscription(image_cls, image_name, self._on_image, qin, raw=True)
                self.image_topic = sub.topic_name  # after remapping: errors name the real topic
                if p.topics.camera_info:
                    sub = self.create_subscription(CameraInfo, p.topics.camera_info, self._on_camera_info, qin,
                                                   raw=True)
                    self.info_topic = sub.topic_name
            sub = self.create_subscription(Detection2DArray, p.topics.detections, self._on_detections, qin, raw=True)
            self.det_topic = sub.topic_name
            self.pub_stop = self.create_publisher(Bool, p.topics.stop_request, qout)
            self.pub_results = self.create_publisher(DiagnosticArray, p.topics.monitor_results, qout)
            self.overlay = OverlayPublisher(self, p.topics.overlay, p.overlay, qout)
            self.pub_diag = self.create_publisher(DiagnosticArray, p.topics.diagnostics, qout)
            self.timer = self.create_timer(p.diagnostics_period_s, self._on_timer)
            names = ", ".join(self.suite.names)
            self.get_logger().info(
                f"monitoring {self.image_topic if p.use_image else '(no image)'} + {self.det_topic} with [{names}]; "
                f"transport: {self.transport['transport']} ({self.transport['dds_profile']})")

        # ------------------------------------------------------------ configuration
        def _now(self) -> int:
            return self.get_clock().now().nanoseconds

        def _reconfigure(self, p: SafetyMonitorParams) -> None:
            _set_opencv_threads(p.opencv_threads)
            self.suite = MonitorSuite(p.monitors)
            self.health.stale_timeout_ns = int(p.stale_timeout_s * 1e9)
            self.health.stale_level = p.stale_level
            self.liveness.warn_after_ns = int(p.stale_timeout_s * 1e9)
            self.liveness.error_after_ns = int(p.liveness.error_after_s * 1e9)
            self.liveness.window_ns = int(p.liveness.rate_window_s * 1e9)
            self.liveness.stale_level = self.health.stale_as
            self.timer.timer_period_ns = int(p.diagnostics_period_s * 1e9)
            self.last.clear()
            self.failed.clear()
            self.get_logger().info("parameters changed: monitors rebuilt (track state reset)")

        # ------------------------------------------------------------ inputs
        def _on_image(self, raw: bytes) -> None:
            frames = self.liveness.frames
            try:
                self.liveness.input(self.image_topic, self._now())
                self.health.received(self._now())
                msg = convert.decode_cdr(raw, self.image_type, self.image_topic)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                image = convert.any_image_from_msg(msg, self.image_type, self.image_topic, self.info_size)
                pair = self.pairer.add_first(stamp, (image, str(msg.header.frame_id)))
                if pair is not None:
                    self._process(pair[0], pair[1], pair[2])
            except convert.MessageError as exc:
                self._reject(self.image_topic, str(exc))
            except Exception as exc:  # the node never dies on input
                self._reject(self.image_topic, f"internal error: {type(exc).__name__}: {exc}")
            if self.liveness.frames == frames:
                self._check_liveness()

        def _on_camera_info(self, raw: bytes) -> None:
            try:
                msg = convert.decode_cdr(raw, "sensor_msgs/msg/CameraInfo", self.info_topic)
                self.info_size = convert.camera_info_size(msg, self.info_topic)
            except convert.MessageError as exc:
                self._reject(self.info_topic, str(exc))

        def _on_detections(self, raw: bytes) -> None:
            frames = self.liveness.frames
            try:
                self.liveness.input(self.det_topic, self._now())
                self.health.received(self._now())
                check_count(raw, self.params.config.limits, self.det_topic)  # before the (costly) decode
                msg = convert.decode_cdr(raw, "vision_msgs/msg/Detection2DArray", self.det_topic)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                dets = convert.detections_from_msg(msg, self.det_topic)
                if not self.params.config.use_image:
                    self._process(stamp, (None, str(msg.header.frame_id)), dets)
                    return
                pair = self.pairer.add_second(stamp, dets)
                if pair is not None:
                    self._process(pair[0], pair[1], pair[2])
            except convert.MessageError as exc:
                self._reject(self.det_topic, str(exc))
            except Exception as exc:
                self._reject(self.det_topic, f"internal error: {type(exc).__name__}: {exc}")
            if self.liveness.frames == frames:
                self._check_liveness()

        def _reject(self, topic: str, reason: str) -> None:
            self.health.reject(topic, reason)
            self.get_logger().warning(f"skipped message: {reason}", throttle_duration_sec=1.0)
            self._publish_diagnostics()

        # ------------------------------------------------------------ monitors
        def _process(self, stamp: int, image_item: tuple[Any, str], dets: Any) -> None:
            image, frame_id = image_item
            frame = Frame(stamp_ns=stamp, detections=dets, image=image, frame_id=frame_id)
            results, failed = self.suite.evaluate(frame)
            if failed:
                self.get_logger().error(f"monitor(s) {sorted(failed)} raised; fail-safe", throttle_duration_sec=1.0)
            self.health.processed()
            self.liveness.frame(self._now())
            stop = stop_requested(results, self.params.config, failed, self.suite.runtime.name,
                                  self.suite.stop_rule.name)
            hw = self.params.config.hardware_id
            statuses = [convert.result_status(r, "", hw) for r in results]
            # the stop decision travels stamped with its frame too (std_msgs/Bool has no header)
            statuses.append(convert.status(STOP_STATUS, Level.WARN if stop else Level.OK,
                                           "stop requested" if stop else "no stop", {"alarm": stop}, hw))
            self.pub_results.publish(convert.diagnostic_array_msg(statuses, stamp))
            from std_msgs.msg import Bool

            self.pub_stop.publish(Bool(data=stop))
            self.overlay.maybe_publish(frame, results, stop, self.params.config.monitors, self.suite.plausibility)
            changed = failed != self.failed or any(
                self.last.get(r.name) is None or self.last[r.name].level != r.level for r in results)
            self.failed = failed
            self.last = {r.name: r for r in results}
            if changed:
                self._publish_diagnostics()

        # ------------------------------------------------------------ liveness
        def _liveness_detail(self) -> str:
            """Why inputs may not become frames: unpaired and skipped counts so far."""
            s = self.pairer.stats
            parts = [f"{s.pairs} pairs", f"{s.dropped_first} unpaired images",
                     f"{s.dropped_second} unpaired detections"]
            skipped = sum(self.health.bad.values())
            if skipped:
                parts.append(f"{skipped} skipped bad messages")
            return ", ".join(parts) + f"; transport: {self.transport['transport']}"

        def _check_liveness(self) -> None:
            """Stop requests while liveness is ERROR (rate-limited); /diagnostics at once when its level changes."""
            now = self._now()
            state = self.liveness.state(now, self._liveness_detail())
            if state.stop and self.params.config.liveness.stop_on_error and (
                    now - self.liveness_stop_ns >= LIVENESS_STOP_PERIOD_NS):
                from std_msgs.msg import Bool

                self.liveness_stop_ns = now
                self.pub_stop.publish(Bool(data=True))
                self.get_logger().error(f"liveness: {state.message}", throttle_duration_sec=5.0)
            if state.level != self.liveness_level:
                self.liveness_level = state.level
                self._publish_diagnostics()

        # ------------------------------------------------------------ /diagnostics
        def _statuses(self) -> list[Any]:
            now = self._now()
            hw = self.params.config.hardware_id
            level, message = self.health.level_message(now)
            values = self.health.values()
            values["unpaired_images"], values["unpaired_detections"] = (
                self.pairer.stats.dropped_first, self.pairer.stats.dropped_second)
            live = self.liveness.state(now, self._liveness_detail())
            if level == Level.OK and live.level != Level.OK:  # receiving is not OK while no frame comes out
                level = Level.WARN if live.level in (Level.WARN, Level.ERROR) else Level.STALE
                message = "receiving, but no frame processed (see liveness)"
            out = [convert.status(f"{self.prefix}input", level, message, values, hw)]
            out.append(convert.status(f"{self.prefix}liveness", live.level, live.message,
                                      {**live.values, **self.transport}, hw))
            # a member's last result is shown only while frames are being processed: never an old OK
            last = self.liveness.last_frame_ns
            stale = self.health.is_stale(now) or (last is not None and now - last > self.liveness.warn_after_ns)
            for name in self.suite.names:
                r = self.last.get(name)
                if stale or r is None:
                    lvl = self.health.stale_as if stale else Level.STALE
                    out.append(convert.status(f"{self.prefix}{name}", lvl, "stale: no recent frame"
                                              if stale else "no frame processed yet", {}, hw))
                else:
                    out.append(convert.result_status(r, self.prefix, hw))
            return out

        def _publish_diagnostics(self) -> None:
            self.pub_diag.publish(convert.diagnostic_array_msg(self._statuses(), self._now()))

        def _on_timer(self) -> None:
            try:
                self._check_liveness()
            except Exception as exc:  # the liveness check must never stop the diagnostics timer
                self.get_logger().error(f"liveness check failed: {exc}", throttle_duration_sec=5.0)
            publish_period_diagnostics(self)

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``safety_monitor``."""
    return run_node(make_node, args)


if __name__ == "__main__":
    import sys

    sys.exit(main())
