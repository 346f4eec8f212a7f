"""Image outlines of a monitors config's regions on a given camera (for overlays and figures)."""

from __future__ import annotations

import numpy as np

from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError, corridor_for, rect_pixels


def _rect_polygon(rect: tuple[float, float, float, float]) -> np.ndarray:
    x0, y0, x1, y1 = rect
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


def region_outlines(config: MonitorsConfig, camera: CameraInUse,
                    speed_mps: float | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """``{"warning" | "danger" | "stop" | "stop_corridor": polygon (n, 2)}`` of the enabled regions that fit the
    camera (``stop``: the stop rule's rectangle, or its corridor under ``rule: corridor``; ``stop_corridor``: the
    corridor beside the rectangle under ``rule: either``), and one message per region that does not (`RegionError`)."""
    out: dict[str, np.ndarray] = {}
    problems: list[str] = []
    wanted = []
    if config.plausibility.enabled:
        wanted += [("warning", "plausibility.warning_region", config.plausibility.warning_region),
                   ("danger", "plausibility.danger_region", config.plausibility.danger_region)]
    stop = config.stop_region
    if stop.enabled and stop.uses_region:
        wanted.append(("stop", "stop_region.region", stop.region))
    for key, name, region in wanted:
        try:
            out[key] = _rect_polygon(rect_pixels(name, region, camera))
        except RegionError as exc:
            problems.append(str(exc))
    if stop.enabled and stop.uses_corridor and stop.corridor is not None:
        try:
            key = "stop" if stop.rule == "corridor" else "stop_corridor"
            out[key] = corridor_for("stop_region.corridor", stop.corridor, camera, config.camera).outline(speed_mps)
        except RegionError as exc:
            problems.append(str(exc))
    return out, problems
