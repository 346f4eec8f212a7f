"""``bbsl_monitor`` node: BBSL specs evaluated on every detection message; active case per spec, /diagnostics.

Each spec (``specs`` parameter: paths) is parsed, type-checked and compiled at start-up with the bindings of
the ``bbsl`` config section (``bbsl_config`` parameter); a spec that fails stops the node with the parser's
``file:line:column`` message (exit code 2). Per detection message, every detection of the subject classes is
the spec's subject (Tanaka et al., Definitions 6-9); the cases that hold for at least one subject (with the
precondition) are the frame's active cases. Output ``~/cases``: diagnostic_msgs/DiagnosticArray stamped with
the detections' stamp, one status per spec (message = active cases joined by ", "; values = per-case subject
counts); the same statuses, plus input health, go to ``/diagnostics``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level
from perception_safety.ros import convert
from perception_safety.ros.diagnostics import InputHealth
from perception_safety.ros.limits import DetectionLimits, check_count
from perception_safety.ros.params import MAX_TIMEOUT_S, MIN_DIAGNOSTICS_PERIOD_S, StrictParams
from perception_safety.ros.runner import publish_period_diagnostics, run_node

NODE_NAME = "bbsl_monitor"


_Strict = StrictParams


class Topics(_Strict):
    detections: str = "/detections"
    camera_info: str = ""
    """sensor_msgs/CameraInfo of the camera the detections come from: its image size must be the bbsl config's
    ``image_size`` the specs are compiled for, else every spec status is an ERROR naming both ('' = no check)."""
    cases: str = "~/cases"
    diagnostics: str = "/diagnostics"


class QosParams(_Strict):
    input_depth: int = Field(default=5, ge=1, le=1000)
    reliable_inputs: bool = False
    output_depth: int = Field(default=10, ge=1, le=1000)


class BBSLMonitorParams(_Strict):
    """Parameters of the node (``config/bbsl_monitor.yaml``); topics, qos, specs and bbsl_config are read-only."""

    topics: Topics = Topics()
    qos: QosParams = QosParams()
    specs: list[str] = Field(default_factory=list, description="BBSL spec files (at least one)")
    bbsl_config: str = Field(default="", description="YAML file with a `bbsl:` section (bindings, image size)")
    classes: list[str] = Field(default_factory=list, description="subject classes; empty: the config's")
    alert_cases: list[str] = Field(default_factory=list, description="active cases that make the status WARN")
    stale_timeout_s: float = Field(default=1.0, gt=0.0, le=MAX_TIMEOUT_S)
    stale_level: Literal["stale", "error"] = "stale"
    diagnostics_period_s: float = Field(default=1.0, ge=MIN_DIAGNOSTICS_PERIOD_S, le=MAX_TIMEOUT_S)
    hardware_id: str = "camera"
    limits: DetectionLimits = DetectionLimits()


READ_ONLY = ("topics", "qos", "specs", "bbsl_config")


class SpecSet:
    """The loaded specs with names (file stems, made unique) and the subject classes."""

    def __init__(self, params: BBSLMonitorParams) -> None:
        from perception_safety.bbsl import load_spec
        from perception_safety.bbsl.config import BBSLConfig
        from perception_safety.io.config import ConfigError, load_model
        from perception_safety.io.paths import resolve_file

        if not params.specs:
            raise ConfigError("parameter specs: at least one BBSL spec file is required")
        cfg = load_model(resolve_file(params.bbsl_config, "bbsl_config") if params.bbsl_config else None,
                         BBSLConfig, section="bbsl")
        self.image_size = (round(cfg.image_size[0]), round(cfg.image_size[1]))
        self.default_classes = cfg.detection_class_set()
        self.classes = set(params.classes) if params.classes else self.default_classes
        bindings = cfg.parsed_bindings()
        self.specs: list[tuple[str, Any]] = []
        for i, value in enumerate(params.specs):
            path = resolve_file(value, f"specs[{i}]")
            spec = load_spec(path, bindings, cfg.image_size)  # BBSLError: file:line:column
            name = path.stem
            while name in {n for n, _ in self.specs}:
                name += "_"
            self.specs.append((name, spec))

    def evaluate(self, frame: Frame) -> list[tuple[str, tuple[str, ...], dict[str, int]]]:
        """Per spec: its name, the active cases (spec order) and per-case subject counts."""
        out = []
        for name, spec in self.specs:
            ev = spec.evaluate_frame(frame, self.classes)
            hits = ev.cases & ev.precondition[:, None]
            counts = {case: int(n) for case, n in zip(ev.case_names, hits.sum(axis=0), strict=True)}
            counts["subjects"] = len(ev.detection_indices)
            counts["precondition"] = int(np.count_nonzero(ev.precondition))
            active = tuple(c for c in ev.case_names if counts[c] > 0)
            out.append((name, active, counts))
        return out


def make_node(name: str = NODE_NAME) -> Any:
    """Create the rclpy node (specs loaded; any error raises a `PerceptionSafetyError`)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.node import Node
    from vision_msgs.msg import Detection2DArray

    from perception_safety.ros.params import NodeParams
    from perception_safety.ros.qos import input_qos, output_qos

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__(name)
            self.params = NodeParams(self, BBSLMonitorParams, READ_ONLY, on_change=self._reconfigure)
            p = self.params.config
            self.specset = SpecSet(p)
            self.prefix = f"{self.get_name()}: "
            self.health = InputHealth(int(p.stale_timeout_s * 1e9), p.stale_level, started_ns=self._now())
            self.last: dict[str, Any] = {}
            sub = self.create_subscription(Detection2DArray, p.topics.detections, self._on_detections,
                                           input_qos(p.qos.input_depth, p.qos.reliable_inputs), raw=True)
            self.det_topic = sub.topic_name
            self.camera_problem: str | None = None
            self.camera_size: tuple[int, int] | None = None
            if p.topics.camera_info:
                from sensor_msgs.msg import CameraInfo

                sub = self.create_subscription(CameraInfo, p.topics.camera_info, self._on_camera_info,
                                               input_qos(p.qos.input_depth, p.qos.reliable_inputs), raw=True)
                self.info_topic = sub.topic_name
            qout = output_qos(p.qos.output_depth)
            self.pub_cases = self.create_publisher(DiagnosticArray, p.topics.cases, qout)
            self.pub_diag = self.create_publisher(DiagnosticArray, p.topics.diagnostics, qout)
            self.timer = self.create_timer(p.diagnostics_period_s, self._on_timer)
            specs = ", ".join(f"{n} {s.case_names}" for n, s in self.specset.specs)
            self.get_logger().info(f"evaluating {self.det_topic} (classes {sorted(self.specset.classes)}): {specs}")

        def _now(self) -> int:
            return self.get_clock().now().nanoseconds

        def _reconfigure(self, p: BBSLMonitorParams) -> None:
            self.specset.classes = set(p.classes) if p.classes else self.specset.default_classes
            self.health.stale_timeout_ns = int(p.stale_timeout_s * 1e9)
            self.health.stale_level = p.stale_level
            self.timer.timer_period_ns = int(p.diagnostics_period_s * 1e9)

        def _status(self, spec: str, active: tuple[str, ...], counts: dict[str, int]) -> Any:
            alert = set(active) & set(self.params.config.alert_cases)
            level = Level.WARN if alert else Level.OK
            message = ", ".join(active) or "no case active"
            if self.camera_problem:  # the specs' image-relative terms are placed for another image: never OK
                level, message = Level.ERROR, f"configuration error: {self.camera_problem}; cases: {message}"
            return convert.status(f"{self.prefix}{spec}", level, message, counts, self.params.config.hardware_id)

        def _on_camera_info(self, raw: bytes) -> None:
            """The camera's image size against the bbsl config's image_size (issue 23: a spec compiled for another
            image size evaluates image-relative terms in the wrong place)."""
            try:
                msg = convert.decode_cdr(raw, "sensor_msgs/msg/CameraInfo", self.info_topic)
                size = convert.camera_info_size(msg, self.info_topic)
            except convert.MessageError as exc:
                self.health.reject(self.info_topic, str(exc))
                return
            if size == self.camera_size:
                return
            self.camera_size = size
            want = self.specset.image_size
            self.camera_problem = None if size == want else (
                f"the specs are compiled for a {want[0]}x{want[1]} image (bbsl_config image_size), but the camera "
                f"gives {size[0]}x{size[1]}")
            if self.camera_problem:
                self.get_logger().error(self.camera_problem)
            self._publish_diagnostics()

        def _on_detections(self, raw: bytes) -> None:
            stamp = None
            try:
                self.health.received(self._now())
                check_count(raw, self.params.config.limits, self.det_topic)  # before the (costly) decode
                msg = convert.decode_cdr(raw, "vision_msgs/msg/Detection2DArray", self.det_topic)
                stamp = convert.stamp_to_ns(msg.header.stamp)
                frame = Frame(stamp_ns=stamp, detections=convert.detections_from_msg(msg, self.det_topic))
                results = self.specset.evaluate(frame)
            except convert.MessageError as exc:
                self._reject(str(exc), stamp)
                return
            except Exception as exc:  # the node never dies on input
                self._reject(f"{self.det_topic}: internal error: {type(exc).__name__}: {exc}", stamp)
                return
            self.health.processed()
            statuses = [self._status(*r) for r in results]
            self.pub_cases.publish(convert.diagnostic_array_msg(statuses, stamp))
            changed = any(self.last.get(n) != a for n, a, _ in results)
            self.last = {n: a for n, a, _ in results}
            self.last_statuses = statuses
            if changed:
                self._publish_diagnostics()

        def _reject(self, reason: str, stamp: int | None) -> None:
            """An unreadable message is a frame the specs did not judge: ERROR per spec on ``~/cases`` (at the
            message's stamp, else now with 'stamp unknown'), so a consumer never reads a gap as 'no case'."""
            self.health.reject(self.det_topic, reason)
            self.get_logger().warning(f"skipped message: {reason}", throttle_duration_sec=1.0)
            when = "" if stamp is not None else " (stamp unknown: received now)"
            statuses = [convert.status(f"{self.prefix}{spec}", Level.ERROR, f"unjudged{when}: {reason}", {},
                                       self.params.config.hardware_id) for spec, _ in self.specset.specs]
            self.pub_cases.publish(convert.diagnostic_array_msg(statuses, self._now() if stamp is None else stamp))
            self._publish_diagnostics()

        def _publish_diagnostics(self) -> None:
            now = self._now()
            level, message = self.health.level_message(now)
            hw = self.params.config.hardware_id
            out = [convert.status(f"{self.prefix}input", level, message, self.health.values(), hw)]
            if self.params.config.topics.camera_info:
                want = "x".join(map(str, self.specset.image_size))
                cam = (Level.OK, f"specs compiled for the camera's {want} image")
                if self.camera_size is None:
                    cam = (Level.STALE, f"no CameraInfo yet: the specs' image size {want} not checked")
                elif self.camera_problem:
                    cam = (Level.ERROR, f"configuration error: {self.camera_problem}")
                out.append(convert.status(f"{self.prefix}camera", *cam, {"spec_image_size": want}, hw))
            stale = self.health.is_stale(now)
            for spec, _ in self.specset.specs:
                prev = next((s for s in getattr(self, "last_statuses", []) if s.name == f"{self.prefix}{spec}"), None)
                if stale or prev is None:
                    # never OK before a detection message was evaluated: the spec is monitoring nothing yet
                    out.append(convert.status(f"{self.prefix}{spec}", self.health.stale_as if stale else Level.STALE,
                                              "stale: no recent detections" if stale else "waiting for detections",
                                              {}, hw))
                else:
                    out.append(prev)
            self.pub_diag.publish(convert.diagnostic_array_msg(out, now))

        def _on_timer(self) -> None:
            publish_period_diagnostics(self)

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``bbsl_monitor``."""
    return run_node(make_node, args)


if __name__ == "__main__":
    import sys

    sys.exit(main())
