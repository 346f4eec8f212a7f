"""``safety_monitor`` node: camera image + detections -> monitors -> /diagnostics, stop request, per-frame results.

Inputs are raw subscriptions (CDR bytes) deserialized zero-copy with rosbags and converted exactly as the
offline bag reader does, then paired by header stamp (exact, or nearest within ``sync.slop_s``). Each pair
is one `Frame` for the monitors of `perception_safety.monitors` (contrast, plausibility, stop region).
Outputs: ``~/stop_request`` (std_msgs/Bool, every frame), ``~/monitor_results`` (diagnostic_msgs/DiagnosticArray
stamped with the image stamp: one status per monitor member, the combined ``monitor`` (m_f), ``stop_region`` and
a last ``stop_request`` status whose ``alarm`` is the frame's stop decision), and ``/diagnostics``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import EgoState, Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError, camera_in_use
from perception_safety.ros import convert, transport
from perception_safety.ros.diagnostics import InputHealth
from perception_safety.ros.judgement import Conflicts, DetectionReading, StopLog, UnjudgedGate
from perception_safety.ros.limits import check_count
from perception_safety.ros.liveness import EgoMotion, Liveness
from perception_safety.ros.memory import keep_frame_buffers
from perception_safety.ros.monitor_suite import Guarded, MonitorSuite, RegionCheck, stop_requested
from perception_safety.ros.overlay import OverlayPublisher
from perception_safety.ros.runner import make_executor, publish_period_diagnostics, run_node
from perception_safety.ros.safety_monitor_params import READ_ONLY, SafetyMonitorParams, disabled_safety_functions
from perception_safety.ros.sync import StampPairer

__all__ = ["READ_ONLY", "Guarded", "MonitorSuite", "SafetyMonitorParams", "main", "make_node", "stop_requested"]

NODE_NAME = "safety_monitor"


#: name of the extra status in ``monitor_results`` that carries the frame's stop decision
STOP_STATUS = "stop_request"
#: liveness stop requests are repeated at most this often (ns) while the liveness status is ERROR
LIVENESS_STOP_PERIOD_NS = 100_000_000
#: period of the watchdog timer that turns liveness ERROR and late unjudged frames into stop requests (s)
WATCHDOG_PERIOD_S = 0.05
#: processed frames remembered (image and detections) to judge a later detection message with the same stamp
RECENT_FRAMES = 4


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
            self.pairer: StampPairer[Any, Any] = StampPairer(round(p.sync.slop_s * 1e9), p.sync.queue_size,
                                                             merge=self._merge_queued)
            self.gate = UnjudgedGate(p.unjudged_frames, round(p.unjudged_ms * 1e6))
            self.gate_level = Level.OK
            self.conflicts = Conflicts()
            #: stamp -> (image item, detections, stop) of the last processed frames (conflicting stamps)
            self.recent: OrderedDict[int, tuple[tuple[Any, str], DetectionReading, bool]] = OrderedDict()
            self.stop_ns = 0
            self.stop_log = StopLog(disabled_safety_functions(p))
            if self.stop_log.switched_off:
                self.get_logger().warning(f"safety functions switched off by the params file: "
                                          f"{self.stop_log.switched_off}")
            self.motion = EgoMotion(p.silence, bool(p.topics.odometry))
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
            self.camera: Intrinsics | None = None
            self.regions = RegionCheck(self.suite)
            if p.use_image:
                sub = self.create_subscription(image_cls, image_name, self._on_image, qin, raw=True)
                self.image_topic = sub.topic_name  # after remapping: errors name the real topic
                if p.topics.camera_info:
                    sub = self.create_subscription(CameraInfo, p.topics.camera_info, self._on_camera_info, qin,
                                                   raw=True)
                    self.info_topic = sub.topic_name
            sub = self.create_subscription(Detection2DArray, p.topics.detections, self._on_detections, qin, raw=True)
            self.det_topic = sub.topic_name
            if p.topics.odometry:
                from nav_msgs.msg import Odometry

                sub = self.create_subscription(Odometry, p.topics.odometry, self._on_odometry, qin, raw=True)
                self.odom_topic = sub.topic_name
            self.pub_stop = self.create_publisher(Bool, p.topics.stop_request, qout)
            self.pub_results = self.create_publisher(DiagnosticArray, p.topics.monitor_results, qout)
            self.overlay = OverlayPublisher(self, p.topics.overlay, p.overlay, qout)
            self.pub_diag = self.create_publisher(DiagnosticArray, p.topics.diagnostics, qout)
            self.timer = self.create_timer(p.diagnostics_period_s, self._on_timer)
            self.watchdog = self.create_timer(WATCHDOG_PERIOD_S, self._on_watchdog)
            static = p.monitors.camera
            if static.image_size is not None:  # a configured camera is checked at once, before any message
                self._check_regions(camera_in_use(Frame(0), static))
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
            self.regions = RegionCheck(self.suite)
            if self.info_size is not None:
                self._check_regions(CameraInUse(self.info_size, self.camera))
            self.get_logger().info("parameters changed: monitors rebuilt (track state reset)")

        # ------------------------------------------------------------ inputs
        def _on_image(self, raw: bytes) -> None:
            frames = self.liveness.frames
            try:
                self._received(self.image_topic)
                msg = convert.decode_cdr(raw, self.image_type, self.image_topic)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                image = convert.any_image_from_msg(msg, self.image_type, self.image_topic, self.info_size)
                pair = self.pairer.add_first(stamp, (image, str(msg.header.frame_id)))
                if pair is not None:
                    self._process(pair[0], pair[1], pair[2])
            except convert.MessageError as exc:
                self._reject(self.image_topic, str(exc), unjudged=True)
            except Exception as exc:  # the node never dies on input
                self._reject(self.image_topic, f"internal error: {type(exc).__name__}: {exc}", unjudged=True)
            if self.liveness.frames == frames:
                self._check_liveness()

        def _received(self, topic: str) -> None:
            """An input message arrived (good or bad), one clock read for liveness and input health."""
            now = self._now()
            self.liveness.input(topic, now)
            self.health.received(now)

        def _on_camera_info(self, raw: bytes) -> None:
            try:
                msg = convert.decode_cdr(raw, "sensor_msgs/msg/CameraInfo", self.info_topic)
                self.info_size = convert.camera_info_size(msg, self.info_topic)
                self.camera = convert.camera_info_intrinsics(msg, self.info_topic)
                self._check_regions(CameraInUse(self.info_size, self.camera))
            except convert.MessageError as exc:
                self._reject(self.info_topic, str(exc))

        def _on_odometry(self, raw: bytes) -> None:
            try:
                msg = convert.decode_cdr(raw, "nav_msgs/msg/Odometry", self.odom_topic)
                self.motion.odometry(self._now(), convert.ego_from_msg(msg, self.odom_topic).speed)
            except convert.MessageError as exc:
                self._reject(self.odom_topic, str(exc))
            except ValueError as exc:
                self._reject(self.odom_topic, f"{self.odom_topic}: {exc}")

        def _live(self, now: int, with_rates: bool = True) -> Any:
            stop_on_error = self.params.config.liveness.stop_on_error
            return self.liveness.state(now, self._liveness_detail(), stop_on_error, self.motion.moving(now),
                                       with_rates)

        def _on_detections(self, raw: bytes) -> None:
            frames = self.liveness.frames
            try:
                self._received(self.det_topic)
                check_count(raw, self.params.config.limits, self.det_topic)  # before the (costly) decode
                msg = convert.decode_cdr(raw, "vision_msgs/msg/Detection2DArray", self.det_topic)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                dets, problems = convert.readable_detections(msg, self.det_topic)
                if problems:  # judged on the readable boxes; WARN at once, the gate decides about a stop
                    self._reject(self.det_topic, f"{len(problems)} of {len(dets) + len(problems)} boxes unreadable "
                                 f"(frame judged on the rest, unjudged): {problems[0]}")
                self._offer(stamp, str(msg.header.frame_id), DetectionReading(dets, problems))
            except convert.MessageError as exc:
                self._reject(self.det_topic, str(exc), unjudged=True)
            except Exception as exc:
                self._reject(self.det_topic, f"internal error: {type(exc).__name__}: {exc}", unjudged=True)
            if self.liveness.frames == frames:
                self._check_liveness()

        def _offer(self, stamp: int, frame_id: str, reading: DetectionReading) -> None:
            """A detection message: a second one for a processed frame is a conflict, judged again on both."""
            if stamp in self.recent:
                image_item, old, old_stop = self.recent[stamp]
                merged = old.merged(reading)
                self.conflicts.add(stamp, self.det_topic, merged.messages)
                self.get_logger().warning(self.conflicts.last, throttle_duration_sec=1.0)
                self._process(stamp, image_item, merged, cautious=old_stop, count=reading.unjudged and not old.unjudged)
                self._publish_diagnostics()
                return
            if not self.params.config.use_image:
                self._process(stamp, (None, frame_id), reading)
                return
            pair = self.pairer.add_second(stamp, reading)
            if pair is not None:
                self._process(pair[0], pair[1], pair[2])

        def _merge_queued(self, stamp: int, waiting: DetectionReading, new: DetectionReading) -> DetectionReading:
            """Two detection messages with one stamp, both still waiting for their image: one frame, all boxes."""
            merged = waiting.merged(new)
            self.conflicts.add(stamp, self.det_topic, merged.messages)
            self.get_logger().warning(self.conflicts.last, throttle_duration_sec=1.0)
            self._publish_diagnostics()
            return merged

        def _reject(self, topic: str, reason: str, unjudged: bool = False) -> None:
            """A bad message: reported at once; a message that leaves its frame unjudged feeds the gate too."""
            if unjudged and self.gate.frame((reason,), self._now()):
                self._publish_stop(True, unjudged=True)
            self.health.reject(topic, reason)
            self.get_logger().warning(f"skipped message: {reason}", throttle_duration_sec=1.0)
            self._publish_diagnostics()

        # ------------------------------------------------------------ monitors
        def _publish_stop(self, stop: bool, unjudged: bool = False) -> None:
            from std_msgs.msg import Bool

            self.pub_stop.publish(Bool(data=stop))
            self.stop_log.published(self._now(), stop)
            if stop:
                self.stop_ns = self._now()
                self.gate.stops += int(unjudged)

        def _process(self, stamp: int, image_item: tuple[Any, str], reading: DetectionReading,
                     cautious: bool = False, count: bool = True) -> None:
            """Judge one frame; ``cautious``: a verdict for this stamp already requested a stop (conflict)."""
            image, frame_id = image_item
            frame = Frame(stamp_ns=stamp, detections=reading.detections, image=image, frame_id=frame_id,
                          camera=self.camera, ego=self._fresh_ego())
            try:
                self._check_regions(camera_in_use(frame, self.params.config.monitors.camera))
            except RegionError as exc:  # not even the image size is known: the monitors fail safe below
                self._check_regions(None, str(exc))
            results, failed = self.suite.evaluate(frame)
            results = self.suite.mark_unjudged(results, reading.problems)
            if failed:
                self.get_logger().error(f"monitor(s) {sorted(failed)} raised; fail-safe", throttle_duration_sec=1.0)
            self.health.processed()
            self.liveness.frame(self._now())
            judged = stop_requested(results, self.params.config, failed, self.suite.runtime.name,
                                    self.suite.stop_name)
            now = self._now()
            gate_stop = self.gate.frame(reading.problems, now) if count else self.gate.tick(now)
            regions_stop = bool(self.regions.problems)
            stop = judged or gate_stop or cautious or regions_stop
            why = [w for w, on in (("judged boxes", judged), ("unjudged frames", gate_stop),
                                   ("conflicting detections", cautious), ("regions do not fit the camera",
                                                                          regions_stop)) if on]
            hw = self.params.config.hardware_id
            statuses = [convert.result_status(r, "", hw) for r in results]
            # the stop decision travels stamped with its frame too (std_msgs/Bool has no header)
            statuses.append(convert.status(STOP_STATUS, Level.WARN if stop else Level.OK,
                                           f"stop requested: {', '.join(why)}" if stop else "no stop",
                                           {"alarm": stop, "unjudged_boxes": len(reading.problems),
                                            "detection_messages": reading.messages}, hw))
            self.pub_results.publish(convert.diagnostic_array_msg(statuses, stamp))
            self._publish_stop(stop, unjudged=gate_stop and not judged)
            self.recent[stamp] = (image_item, reading, stop)
            while len(self.recent) > RECENT_FRAMES:
                self.recent.popitem(last=False)
            self.overlay.maybe_publish(frame, results, stop, self.params.config.monitors, self.suite.plausibility)
            changed = failed != self.failed or self.gate.status()[0] != self.gate_level or any(
                self.last.get(r.name) is None or self.last[r.name].level != r.level for r in results)
            self.failed = failed
            self.gate_level = self.gate.status()[0]
            self.last = {r.name: r for r in results}
            if changed:
                self._publish_diagnostics()

        def _fresh_ego(self) -> EgoState | None:
            """The latest odometry's speed for a braking corridor, when not older than silence.odometry_timeout_s."""
            last = self.motion.last
            if last is None or self._now() - last[0] > self.params.config.silence.odometry_timeout_s * 1e9:
                return None
            return EgoState(speed=last[1])

        def _check_regions(self, camera: CameraInUse | None, unknown: str = "") -> None:
            """Validate the regions when the camera changes: a configuration error is an ERROR status on
            /diagnostics and a stop request at once (and with every frame while it lasts)."""
            if not self.regions.update(camera, unknown):
                return
            if self.regions.problems:
                self.get_logger().error("monitor regions do not fit the camera: " + "; ".join(self.regions.problems))
                self._publish_stop(True)
            elif camera is not None:
                self.get_logger().info(f"monitor regions fit the {camera.describe()}")
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
            """Stop requests while liveness is ERROR (rate-limited); /diagnostics at once when its level changes.
            Nothing to do while it is OK and frames flow (the steady case of the watchdog and of the first message
            of each pair): the full state (message text, detail string) is skipped then."""
            now = self._now()
            if self.liveness_level == Level.OK and self.liveness.flowing(now):
                return
            state = self._live(now, with_rates=False)
            if state.stop and now - self.liveness_stop_ns >= LIVENESS_STOP_PERIOD_NS:
                self.liveness_stop_ns = now
                self._publish_stop(True)
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
            live = self._live(now)
            if live.silent and live.level == Level.ERROR:  # silence while moving: every status says so
                level, message = Level.ERROR, f"{message}; {live.message}"
            if level == Level.OK and live.level != Level.OK:  # receiving is not OK while no frame comes out
                level = Level.WARN if live.level in (Level.WARN, Level.ERROR) else Level.STALE
                message = "receiving, but no frame processed (see liveness)"
            out = [convert.status(f"{self.prefix}input", level, message, values, hw)]
            out.append(convert.status(f"{self.prefix}liveness", live.level, live.message,
                                      {**live.values, **self.transport}, hw))
            out.append(convert.status(f"{self.prefix}regions", *self.regions.status(), hw))
            # a member's last result is shown only while frames are being processed: never an old OK
            last = self.liveness.last_frame_ns
            stale = self.health.is_stale(now) or (last is not None and now - last > self.liveness.warn_after_ns)
            stale_as = Level.ERROR if live.silent and live.stop else self.health.stale_as
            for name in self.suite.names:
                r = self.last.get(name)
                if stale or r is None:
                    lvl = stale_as if stale else Level.STALE
                    out.append(convert.status(f"{self.prefix}{name}", lvl, "stale: no recent frame"
                                              if stale else "no frame processed yet", {}, hw))
                else:
                    out.append(convert.result_status(r, self.prefix, hw))
            level, message, values = self.stop_log.status(now)
            out.append(convert.status(f"{self.prefix}stop_request", level, message, values, hw))
            idle = stale or last is None  # an OK about frames needs frames: never OK while none are judged
            for what, (level, message), values in (("unjudged", self.gate.status(), self.gate.values()),
                                                   ("conflicts", self.conflicts.status(),
                                                    {"conflicts": self.conflicts.total})):
                if idle and level == Level.OK:
                    level = stale_as if stale else Level.STALE
                    message = f"no recent frame ({message})"
                out.append(convert.status(f"{self.prefix}{what}", level, message, values, hw))
            return out

        def _publish_diagnostics(self) -> None:
            self.pub_diag.publish(convert.diagnostic_array_msg(self._statuses(), self._now()))

        def _on_timer(self) -> None:
            publish_period_diagnostics(self)
            self.conflicts.end_period()

        def _on_watchdog(self) -> None:
            """Stops that no frame carries: unjudged frames not followed by a judged one, liveness ERROR."""
            try:
                now = self._now()
                if self.gate.run_count and self.gate.tick(now) and now - self.stop_ns >= LIVENESS_STOP_PERIOD_NS:
                    self._publish_stop(True, unjudged=True)
                if self.gate.status()[0] != self.gate_level:
                    self.gate_level = self.gate.status()[0]
                    self._publish_diagnostics()
                self._check_liveness()
            except Exception as exc:  # the watchdog must never stop
                self.get_logger().error(f"watchdog failed: {exc}", throttle_duration_sec=5.0)

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``safety_monitor``: the node spun by the executor its ``executor`` parameter names."""
    made: list[Any] = []

    def factory() -> Any:
        made.append(make_node())
        return made[-1]

    def executor() -> Any:
        ex, used = make_executor(made[0].params.config.executor if made else "single_threaded")
        if made:  # on /diagnostics with the transport (liveness status values)
            made[0].transport["executor"] = used
            made[0].get_logger().info(f"executor: {used}")
        return ex

    return run_node(factory, args, executor)


if __name__ == "__main__":
    import sys

    sys.exit(main())
