"""``returns_logger`` node: records a CARLA episode for the SG/RH/AC returns into the episode log (JSON Lines).

Per frame (one ``monitor_results`` message of the safety_monitor, stamped with the image stamp) it writes an
`EpisodeStep` (perception_safety.io.episode_log): ``running`` = ego speed above ``running_speed_mps`` (mission
reward r_M, SG/RH/AC paper eq. 16), ``collision`` = a collision event since the previous frame (safety reward),
``stop`` = the frame's stop decision, ``alarm``/reasons/values = the runtime monitor m_f's verdict, and the frame's
ground truth and ego state (detections are not joined: the monitor results carry what m_f saw).
Ground truth and ego odometry join a frame by nearest stamp within ``sync.slop_s``; a frame waits at most
``sync.max_wait_s`` for them. Episodes: begun at the first frame with the ``episode``/``rollout`` parameters
(or by a ``begin`` command on ``~/episode``), ended by an ``end`` command, or at shutdown (reason ``shutdown``).
Collisions: ``std_msgs/Header`` events on ``topics.collision`` (relay CARLA's CarlaCollisionEvent header to it).
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.core.types import EgoState, Frame, GroundTruthObject
from perception_safety.io.episode_log import EpisodeLogWriter, EpisodeStep
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.ros import convert
from perception_safety.ros.diagnostics import InputHealth
from perception_safety.ros.limits import DetectionLimits, check_count
from perception_safety.ros.params import MAX_TIMEOUT_S, MIN_DIAGNOSTICS_PERIOD_S

NODE_NAME = "returns_logger"


class _Strict(BaseModel):
    # NaN/inf never make sense in a node parameter (a NaN threshold silently disables a comparison)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Topics(_Strict):
    monitor_results: str = "/safety_monitor/monitor_results"
    ground_truth: str = "/ground_truth"
    odometry: str = "/ego/odometry"
    collision: str = "/ego/collision_stamp"
    episode: str = "~/episode"
    diagnostics: str = "/diagnostics"


class SyncParams(_Strict):
    slop_s: float = Field(default=0.025, ge=0.0, le=10.0)
    max_wait_s: float = Field(default=0.5, ge=0.0, le=60.0)
    reorder_s: float = Field(default=0.2, ge=0.0, le=60.0,
                             description="a frame waits this long for earlier-stamped frames arriving late")


class QosParams(_Strict):
    """Inputs are reliable (a logger must not lose frames); odometry may be best effort for sensor-style sources."""

    depth: int = Field(default=100, ge=1, le=10000)
    reliable_odometry: bool = True


class ReturnsLoggerParams(_Strict):
    """Parameters of the node (``config/returns_logger.yaml``); all but running_speed_mps are read-only."""

    topics: Topics = Topics()
    sync: SyncParams = SyncParams()
    qos: QosParams = QosParams()
    log_path: str = "episodes.jsonl"
    episode: str = "episode"
    rollout: str = "monitored"
    monitor_name: str = Field(default="monitor", description="the m_f status in monitor_results")
    stop_name: str = Field(default="stop_request", description="the stop-decision status in monitor_results")
    running_speed_mps: float = Field(default=0.1, ge=0.0)
    fsync: bool = True
    diagnostics_period_s: float = Field(default=1.0, ge=MIN_DIAGNOSTICS_PERIOD_S, le=MAX_TIMEOUT_S)
    stale_timeout_s: float = Field(default=2.0, gt=0.0, le=MAX_TIMEOUT_S)
    limits: DetectionLimits = DetectionLimits()


READ_ONLY = ("topics", "sync", "qos", "log_path", "monitor_name", "stop_name", "fsync", "diagnostics_period_s")


@dataclass
class _Pending:
    stamp: int
    arrived: float
    alarm: bool
    stop: bool
    reasons: tuple[str, ...]
    values: dict[str, float]


class StepAssembler:
    """Joins frames (monitor results) with ground truth, ego state and collisions (no rclpy).

    Frames are kept ordered by stamp and each waits at least ``reorder_s`` for earlier-stamped frames, so a
    collision lands on the frame whose interval (previous stamp, stamp] holds it even when frames arrive out of
    order; a frame older than one already written is counted in ``late`` and dropped (it cannot be placed).
    """

    def __init__(self, slop_ns: int, max_wait_s: float, running_speed: float, reorder_s: float = 0.0) -> None:
        self.slop_ns, self.max_wait_s, self.running_speed = slop_ns, max_wait_s, running_speed
        self.reorder_s = reorder_s
        self.late = 0
        self.gt: deque[tuple[int, tuple[GroundTruthObject, ...]]] = deque(maxlen=200)
        self.ego: deque[tuple[int, EgoState]] = deque(maxlen=200)
        self.collisions: list[int] = []
        self.pending: deque[_Pending] = deque()
        self.prev_stamp: int | None = None
        self.running = True

    def add(self, pending: _Pending) -> bool:
        """Queue a frame in stamp order; False (counted in ``late``) if a later frame was already written.

        A second result for a waiting frame's stamp (the safety monitor judged it again on conflicting detection
        messages) is merged into it, the more cautious way: stop and alarm if either says so.
        """
        if self.prev_stamp is not None and pending.stamp <= self.prev_stamp:
            self.late += 1
            return False
        same = next((p for p in self.pending if p.stamp == pending.stamp), None)
        if same is not None:
            same.stop, same.alarm = same.stop or pending.stop, same.alarm or pending.alarm
            same.reasons = tuple(dict.fromkeys(same.reasons + pending.reasons))
            return True
        i = len(self.pending)
        while i > 0 and self.pending[i - 1].stamp > pending.stamp:
            i -= 1
        self.pending.insert(i, pending)
        return True

    def _nearest(self, items: deque[tuple[int, Any]], stamp: int) -> Any | None:
        best = min(items, key=lambda it: abs(it[0] - stamp), default=None)
        return best[1] if best is not None and abs(best[0] - stamp) <= self.slop_ns else None

    def ready(self, now: float, flush: bool = False) -> list[tuple[int, EpisodeStep]]:
        """Frames whose ground truth and ego arrived (or that waited long enough), oldest first, as steps."""
        out = []
        while self.pending:
            p = self.pending[0]
            gt, ego = self._nearest(self.gt, p.stamp), self._nearest(self.ego, p.stamp)
            waited = now - p.arrived  # an earlier-stamped frame may still arrive within reorder_s
            if not flush and (waited < self.reorder_s or ((gt is None or ego is None) and waited < self.max_wait_s)):
                break
            self.pending.popleft()
            if ego is not None:
                self.running = ego.speed > self.running_speed
            lo = self.prev_stamp if self.prev_stamp is not None else -(2**63)
            collision = any(lo < c <= p.stamp for c in self.collisions)
            self.collisions = [c for c in self.collisions if c > p.stamp]
            self.prev_stamp = p.stamp
            frame = Frame(stamp_ns=p.stamp, ground_truth=gt or (), ego=ego)
            out.append((p.stamp, EpisodeStep(t=0, running=self.running, collision=collision, stop=p.stop,
                                             alarm=p.alarm, frame=frame, reasons=p.reasons, values=p.values)))
        return out


def results_from_array(msg: Any, monitor_name: str, stop_name: str) -> tuple[MonitorResult | None, bool]:
    """The m_f result and the stop decision from a ``monitor_results`` DiagnosticArray."""
    monitor, stop = None, False
    for s in msg.status:
        if s.name == monitor_name:
            monitor = convert.result_from_status(s)
        elif s.name == stop_name:
            stop = convert.result_from_status(s).alarm
    return monitor, stop


def make_node(name: str = NODE_NAME) -> Any:
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from std_msgs.msg import Header, String
    from vision_msgs.msg import Detection2DArray

    from perception_safety.ros.params import NodeParams
    from perception_safety.ros.qos import input_qos, output_qos

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__(name)
            self.params = NodeParams(self, ReturnsLoggerParams, READ_ONLY, on_change=self._reconfigure)
            p = self.params.config
            self.writer = EpisodeLogWriter(p.log_path, fsync=p.fsync, nonfinite="null")
            self.writer.open()
            self.asm = StepAssembler(round(p.sync.slop_s * 1e9), p.sync.max_wait_s, p.running_speed_mps,
                                     p.sync.reorder_s)
            self.nonfinite_steps = 0
            self.nonfinite_values = 0
            self.unwritten_steps = 0
            self.write_error = ""
            self.health = InputHealth(int(p.stale_timeout_s * 1e9), "stale", started_ns=self._now())
            self.current: tuple[str, str] | None = None
            self.t = 0
            self.episodes = 0
            qrel = output_qos(p.qos.depth)
            qin = qrel if p.qos.reliable_odometry else input_qos(p.qos.depth)
            self.topics = {}
            for key, typ, cb, q in (
                ("monitor_results", DiagnosticArray, self._on_results, qrel),
                ("ground_truth", Detection2DArray, self._on_gt, qrel),
                ("odometry", Odometry, self._on_odom, qin),
                ("collision", Header, self._on_collision, qrel),
            ):
                sub = self.create_subscription(typ, getattr(p.topics, key), cb, q, raw=True)
                self.topics[key] = sub.topic_name
            self.create_subscription(String, p.topics.episode, self._on_episode, qrel)
            self.pub_diag = self.create_publisher(DiagnosticArray, p.topics.diagnostics, output_qos(10))
            self.create_timer(0.05, self._flush)
            self.create_timer(p.diagnostics_period_s, self._publish_diagnostics)
            self.get_logger().info(f"logging episodes to {p.log_path} from {self.topics['monitor_results']}")

        def _now(self) -> int:
            return self.get_clock().now().nanoseconds

        def _reconfigure(self, p: ReturnsLoggerParams) -> None:
            self.asm.running_speed = p.running_speed_mps

        def _decode(self, key: str, raw: bytes, msgtype: str) -> Any | None:
            try:
                self.health.received(self._now())
                return convert.decode_cdr(raw, msgtype, self.topics[key])
            except convert.MessageError as exc:
                self.health.reject(self.topics[key], str(exc))
                return None

        def _on_results(self, raw: bytes) -> None:
            msg = self._decode("monitor_results", raw, "diagnostic_msgs/msg/DiagnosticArray")
            if msg is None:
                return
            p = self.params.config
            try:
                monitor, stop = results_from_array(msg, p.monitor_name, p.stop_name)
            except Exception as exc:
                self.health.reject(self.topics["monitor_results"], f"bad result: {exc}")
                return
            alarm = monitor.alarm if monitor else False
            stamp = convert.stamp_to_ns(msg.header.stamp)
            if not self.asm.add(_Pending(stamp, time.monotonic(), alarm, stop, monitor.reasons if monitor else (),
                                         dict(monitor.values) if monitor else {})):
                self.health.reject(self.topics["monitor_results"],
                                   f"frame stamp {stamp} arrived after a later frame was written: not logged")

        def _on_gt(self, raw: bytes) -> None:
            try:
                check_count(raw, self.params.config.limits, self.topics["ground_truth"])
            except convert.MessageError as exc:
                self.health.received(self._now())
                self.health.reject(self.topics["ground_truth"], str(exc))
                return
            msg = self._decode("ground_truth", raw, "vision_msgs/msg/Detection2DArray")
            if msg is None:
                return
            try:
                gt = convert.ground_truth_from_msg(msg, self.topics["ground_truth"])
            except convert.MessageError as exc:
                self.health.reject(self.topics["ground_truth"], str(exc))
                return
            self.asm.gt.append((convert.stamp_to_ns(msg.header.stamp), gt))

        def _on_odom(self, raw: bytes) -> None:
            msg = self._decode("odometry", raw, "nav_msgs/msg/Odometry")
            if msg is None:
                return
            try:
                ego = convert.ego_from_msg(msg, self.topics["odometry"])
            except convert.MessageError as exc:
                self.health.reject(self.topics["odometry"], str(exc))
                return
            self.asm.ego.append((convert.stamp_to_ns(msg.header.stamp), ego))

        def _on_collision(self, raw: bytes) -> None:
            msg = self._decode("collision", raw, "std_msgs/msg/Header")
            if msg is not None:
                self.asm.collisions.append(convert.stamp_to_ns(msg.stamp))

        def _on_episode(self, msg: Any) -> None:
            """JSON ``{"event": "begin", "episode": E, "rollout": R, "meta": {}}`` or ``{"event": "end", ...}``."""
            try:
                cmd = json.loads(msg.data)
                self._write_ready(flush=True)
                if cmd.get("event") == "begin":
                    self._end("restarted")
                    self._begin(str(cmd["episode"]), str(cmd.get("rollout", self.params.config.rollout)),
                                cmd.get("meta") or {})
                elif cmd.get("event") == "end":
                    self._end(str(cmd.get("reason", "")))
                else:
                    raise ValueError(f"unknown event {cmd.get('event')!r}")
            except Exception as exc:
                self.health.reject(self.get_name() + "/episode", f"bad episode command {msg.data!r}: {exc}")

        def _begin(self, episode: str, rollout: str, meta: dict[str, Any]) -> None:
            self.writer.begin_episode(episode, rollout, meta)
            self.current, self.t = (episode, rollout), 0
            self.asm.prev_stamp, self.asm.running = None, True

        def _end(self, reason: str) -> None:
            if self.current is not None:
                self.writer.end_episode(reason)
                self.current = None
                self.episodes += 1

        def _write_ready(self, flush: bool = False) -> None:
            for _stamp, step in self.asm.ready(time.monotonic(), flush):
                if self.current is None:
                    self._begin(self.params.config.episode, self.params.config.rollout, {})
                bad = sum(1 for v in step.values.values() if not math.isfinite(v))
                try:
                    self.writer.write_step(EpisodeStep(self.t, step.running, step.collision, step.stop, step.alarm,
                                                       step.frame, step.reasons, step.values))
                except Exception as exc:  # counted and reported; the next steps are still written
                    self.unwritten_steps += 1
                    self.write_error = str(exc)
                    self.get_logger().error(f"cannot write step: {exc}", throttle_duration_sec=1.0)
                    continue
                if bad:
                    self.nonfinite_steps += 1
                    self.nonfinite_values += bad
                self.health.processed()
                self.t += 1

        def _flush(self) -> None:
            try:
                self._write_ready()
            except Exception as exc:
                self.get_logger().error(f"cannot write step: {exc}", throttle_duration_sec=1.0)

        def _publish_diagnostics(self) -> None:
            now = self._now()
            level, message = self.health.level_message(now)
            values = self.health.values()
            values.update(episodes=self.episodes, step=self.t, nonfinite_steps=self.nonfinite_steps,
                          nonfinite_values=self.nonfinite_values, late_frames=self.asm.late,
                          unwritten_steps=self.unwritten_steps)
            if self.unwritten_steps:
                level, message = Level.ERROR, f"{self.unwritten_steps} step(s) not written: {self.write_error}"
            elif self.nonfinite_steps and level == Level.OK:
                level, message = Level.WARN, (f"{self.nonfinite_values} non-finite monitor value(s) in "
                                              f"{self.nonfinite_steps} step(s), written as null")
            st = convert.status(f"{self.get_name()}: logger", level, message, values)
            self.pub_diag.publish(convert.diagnostic_array_msg([st], now))
            self.health.end_period()

        def destroy_node(self) -> None:
            try:
                self._write_ready(flush=True)
                self._end("shutdown")
            finally:
                self.writer.close()
                super().destroy_node()

    return _Node()


def main(args: list[str] | None = None) -> int:
    """Console script ``returns_logger``."""
    from perception_safety.ros.runner import run_node

    return run_node(make_node, args)


if __name__ == "__main__":
    import sys

    sys.exit(main())
