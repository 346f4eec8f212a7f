"""Parameters of the ``safety_monitor`` node (``config/safety_monitor.yaml``), validated by pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from perception_safety.monitors.config import MonitorsConfig
from perception_safety.ros.limits import DetectionLimits
from perception_safety.ros.overlay import OverlayParams
from perception_safety.ros.params import MAX_OPENCV_THREADS, MAX_TIMEOUT_S, MIN_DIAGNOSTICS_PERIOD_S, StrictParams

_Strict = StrictParams


class Topics(_Strict):
    """Topic names (relative names resolve in the node's namespace; launch remappings apply on top)."""

    image: str = "/camera/image_raw"
    """sensor_msgs/Image; with ``image_transport: compressed`` CompressedImage on ``<image>/compressed``."""
    camera_info: str = "/camera/camera_info"
    """sensor_msgs/CameraInfo: an image whose size disagrees with the latest one is skipped ('' = no check)."""
    detections: str = "/detections"
    stop_request: str = "~/stop_request"
    monitor_results: str = "~/monitor_results"
    overlay: str = "~/overlay"
    diagnostics: str = "/diagnostics"
    odometry: str = ""
    """nav_msgs/Odometry of the ego ('' = none: the vehicle is taken as moving when the inputs fall silent)."""


class SyncParams(_Strict):
    """Stamp pairing of image and detections: ``slop_s = 0`` pairs equal stamps only."""

    slop_s: float = Field(default=0.0, ge=0.0, le=10.0)
    queue_size: int = Field(default=10, ge=1, le=1000)


class QosParams(_Strict):
    """Input depth (sensor-data profile; ``reliable_inputs`` for lossless replay) and output depth (reliable)."""

    input_depth: int = Field(default=5, ge=1, le=1000)
    reliable_inputs: bool = False
    output_depth: int = Field(default=10, ge=1, le=1000)


class LivenessParams(_Strict):
    """Inputs arrive but no frame is processed: WARN after ``stale_timeout_s``, ERROR + stop after ``error_after_s``."""

    error_after_s: float = Field(default=2.0, gt=0.0, le=MAX_TIMEOUT_S)
    stop_on_error: bool = Field(default=True, description="publish stop requests while liveness is ERROR")
    rate_window_s: float = Field(default=5.0, gt=0.0, le=MAX_TIMEOUT_S, description="window of the frame rate")


class SilenceParams(_Strict):
    """Camera and detector both silent for ``stale_timeout_s``: ERROR + stop requests (``stop``: ``moving`` = while
    the vehicle may be moving: no odometry, odometry older than ``odometry_timeout_s`` or speed above
    ``standstill_speed_mps``; ``always``; ``never`` = ``stale_level`` only, as before issue 25)."""

    stop: Literal["moving", "always", "never"] = "moving"
    standstill_speed_mps: float = Field(default=0.1, ge=0.0, le=10.0)
    odometry_timeout_s: float = Field(default=0.5, gt=0.0, le=MAX_TIMEOUT_S)


class SafetyMonitorParams(_Strict):
    """All parameters of the node (``config/safety_monitor.yaml``); topics, sync and QoS are read-only."""

    topics: Topics = Topics()
    use_image: bool = True
    image_transport: Literal["raw", "compressed"] = Field(
        default="raw", description="raw: sensor_msgs/Image on topics.image; compressed: CompressedImage (JPEG/PNG) "
        "on topics.image + '/compressed', decoded once with OpenCV")
    sync: SyncParams = SyncParams()
    qos: QosParams = QosParams()
    stale_timeout_s: float = Field(default=1.0, gt=0.0, le=MAX_TIMEOUT_S)
    stale_level: Literal["stale", "error"] = "stale"
    diagnostics_period_s: float = Field(default=1.0, ge=MIN_DIAGNOSTICS_PERIOD_S, le=MAX_TIMEOUT_S)
    fail_safe_stop: bool = Field(default=True, description="a monitor that raises requests a stop")
    stop_on_monitor_alarm: bool = Field(default=True, description="a contrast/plausibility alarm requests a stop")
    unjudged_frames: int = Field(default=2, ge=1, le=1000, description="unjudged frames (unreadable boxes or "
                                 "messages) in one run that request a stop; the run ends after as many judged frames")
    unjudged_ms: float = Field(default=250.0, gt=0.0, le=MAX_TIMEOUT_S * 1000, description="an unjudged frame not "
                               "followed by a judged one within this time requests a stop")
    hardware_id: str = "camera"
    opencv_threads: int = Field(default=1, ge=-1, le=MAX_OPENCV_THREADS,
                                description="cv2.setNumThreads for the node process: 0/1 no pool, -1 OpenCV default")
    keep_frame_buffers: bool = Field(default=True, description="glibc mallopt: reuse freed frame buffers")
    executor: Literal["events", "single_threaded"] = Field(
        default="events", description="events: rclpy's EventsExecutor (callbacks dispatched from C++; about 1 ms "
        "less CPU per 1080p frame), single_threaded where rclpy has none (before Kilted); single_threaded: "
        "rclpy's SingleThreadedExecutor (rebuilds its wait set in Python at every wake-up)")
    liveness: LivenessParams = LivenessParams()
    silence: SilenceParams = SilenceParams()
    limits: DetectionLimits = DetectionLimits()
    overlay: OverlayParams = OverlayParams()
    monitors: MonitorsConfig = MonitorsConfig()

    @model_validator(mode="after")
    def _liveness_after_stale(self) -> SafetyMonitorParams:
        if self.liveness.error_after_s < self.stale_timeout_s:
            raise ValueError(f"liveness.error_after_s ({self.liveness.error_after_s:g}) must be >= stale_timeout_s "
                             f"({self.stale_timeout_s:g}): WARN comes before ERROR")
        return self


#: safety switches (issue 25 item 5: any DDS participant could switch every safety function off through the
#: parameter service): set at start in the params file, refused at run time like the topics
SAFETY_SWITCHES = ("fail_safe_stop", "stop_on_monitor_alarm", "liveness.stop_on_error", "silence", "unjudged_frames",
                   "unjudged_ms", "monitors.contrast.enabled", "monitors.plausibility.enabled",
                   "monitors.stop_region.enabled", "monitors.stop_region.source")
READ_ONLY = ("topics", "use_image", "image_transport", "sync", "qos", "keep_frame_buffers", "executor", "overlay",
             *SAFETY_SWITCHES)


def disabled_safety_functions(p: SafetyMonitorParams) -> list[str]:
    """The safety functions a params file switched off (reported on /diagnostics as long as the node runs)."""
    off = [f"monitors.{name}.enabled: false" for name in ("contrast", "plausibility", "stop_region")
           if not getattr(p.monitors, name).enabled]
    off += [f"{key}: false" for key, on in (("fail_safe_stop", p.fail_safe_stop),
                                            ("stop_on_monitor_alarm", p.stop_on_monitor_alarm),
                                            ("liveness.stop_on_error", p.liveness.stop_on_error)) if not on]
    if p.silence.stop == "never":
        off.append("silence.stop: never")
    return off
