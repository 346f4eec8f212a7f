"""``perception-safety render BAG --out video.mp4``: a recorded episode as a video of the monitoring overlay.

The bag's frames (images decoded as the node decodes them) run through the same monitors as the node
(`build_runtime_monitor`, `build_stop_rule`), and each frame is drawn by `report.overlay.draw_overlay`, the
function behind the node's ``~/overlay`` topic. Stop = the stop-region rule or an m_f alarm (the node's default
``stop_on_monitor_alarm``). Written with OpenCV's VideoWriter (``mp4v``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from perception_safety.errors import PerceptionSafetyError
from perception_safety.io.bag import BagReadReport, BagTopics, read_frames
from perception_safety.monitors.composite import build_runtime_monitor, build_stop_rule
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.report.overlay import draw_overlay, state_of
from perception_safety.safe_io import atomic_path, write_bytes


class RenderError(PerceptionSafetyError):
    """The video cannot be written (no frames, codec unavailable, ...)."""


@dataclass(frozen=True)
class RenderStats:
    """What a render wrote: frames, frames without an image (drawn on grey), fps, size, alarms and stops."""

    frames: int
    without_image: int
    fps: float
    size: tuple[int, int]
    alarms: int
    stops: int
    report: BagReadReport


def _fps(stamps: list[int]) -> float:
    if len(stamps) < 2:
        return 10.0
    dt = float(np.median(np.diff(np.asarray(stamps, dtype=np.int64)))) / 1e9
    return 1.0 / dt if dt > 0 else 10.0


def render_bag(bag: str | Path, out: str | Path, monitors: MonitorsConfig, topics: BagTopics | None = None,
               fps: float | None = None, frames_dir: str | Path | None = None, every: int = 0,
               stamps: set[int] | None = None) -> RenderStats:
    """Write the overlay video of ``bag`` to ``out``; with ``frames_dir`` also every ``every``-th frame as PNG, or
    exactly the frames of ``stamps`` (e.g. a confusion cell's evidence), each named by its stamp."""
    report = BagReadReport()
    frames = list(read_frames(bag, topics or BagTopics(), report=report))
    if not frames:
        raise RenderError(f"{bag}: no frames to render ({'; '.join(report.summary_lines())})")
    size = next(((f.image.shape[1], f.image.shape[0]) for f in frames if f.image is not None), None)
    if size is None:
        raise RenderError(f"{bag}: no frame has an image (topic {(topics or BagTopics()).image})")
    rate = fps or _fps([f.stamp_ns for f in frames])
    with atomic_path(out) as tmp:  # refuses a device/FIFO/link as --out; the video appears only when complete
        alarms, stops, missing = _write_video(tmp, frames, monitors, rate, size, frames_dir, every, stamps)
    return RenderStats(len(frames), missing, rate, size, alarms, stops, report)


def _write_video(out: Path, frames: list, monitors: MonitorsConfig, rate: float, size: tuple[int, int],
                 frames_dir: str | Path | None, every: int, stamps: set[int] | None = None) -> tuple[int, int, int]:
    """Draw every frame's overlay into the mp4 ``out``; returns (alarm frames, stop frames, frames without image)."""
    writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), rate, size)
    if not writer.isOpened():
        raise RenderError(f"{out}: OpenCV cannot open an mp4v video writer")
    runtime, stop_rule = build_runtime_monitor(monitors), build_stop_rule(monitors)
    plaus = next((m for m in runtime.monitors if hasattr(m, "track_view")), None)
    pngs = Path(frames_dir) if frames_dir is not None else None
    if pngs is not None:
        pngs.mkdir(parents=True, exist_ok=True)
    alarms = stops = missing = 0
    try:
        for i, frame in enumerate(frames):
            comp = runtime.evaluate(frame)
            stop_result = stop_rule.update(frame)
            stop = stop_result.alarm or comp.combined.alarm
            alarms += comp.combined.alarm
            stops += stop
            missing += frame.image is None
            img = draw_overlay(frame, [*comp.parts, comp.combined, stop_result], monitors,
                               state_of(plaus) if plaus is not None else None, stop, size)
            if (img.shape[1], img.shape[0]) != size:  # an image of another size: fit it to the video
                img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
            bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
            writer.write(bgr)
            if pngs is not None and stamps is not None and frame.stamp_ns in stamps:
                write_bytes(pngs / f"stamp_{frame.stamp_ns}.png", cv2.imencode(".png", bgr)[1].tobytes())
            elif pngs is not None and stamps is None and every > 0 and i % every == 0:
                write_bytes(pngs / f"frame_{i:05d}.png", cv2.imencode(".png", bgr)[1].tobytes())
    finally:
        writer.release()
    return alarms, stops, missing
