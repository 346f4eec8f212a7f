"""The overlay as annotations a viewer draws itself: ``visualization_msgs/ImageMarker`` (Foxglove's Image panel and
RViz image overlays draw them over the camera topic, at full resolution, without an extra image stream).

One marker per box and region, in namespaces ``ground_truth`` (white; missed: red), ``detections`` (matched:
green, false: pink; without ground truth: watched class cyan, other green), ``regions`` (warning yellow, danger red,
stop orange) and ``verdict`` (a filled disc top right: red = stop requested, green = drive; one small disc per
monitor below it: red alarm, yellow WARN, grey STALE, green OK). The colours are those of `report.overlay`; the
matching is its `truth_marks`. Markers live ``lifetime_s`` (the overlay's period) so stale ones disappear.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.report import overlay as ov

POLYGON, CIRCLE = 3, 0  # visualization_msgs/ImageMarker types
ADD = 0


def _colour(rgb: Sequence[int], alpha: float = 1.0) -> Any:
    from std_msgs.msg import ColorRGBA

    return ColorRGBA(r=rgb[0] / 255.0, g=rgb[1] / 255.0, b=rgb[2] / 255.0, a=float(alpha))


def _point(x: float, y: float) -> Any:
    from geometry_msgs.msg import Point

    return Point(x=float(x), y=float(y), z=0.0)


def _marker(header: Any, ns: str, mid: int, kind: int, rgb: Sequence[int], lifetime_ns: int,
            points: Iterable[tuple[float, float]] = (), position: tuple[float, float] = (0.0, 0.0),
            scale: float = 2.0, fill: Sequence[int] | None = None) -> Any:
    from builtin_interfaces.msg import Duration
    from visualization_msgs.msg import ImageMarker

    m = ImageMarker()
    m.header = header
    m.ns, m.id, m.type, m.action = ns, int(mid), int(kind), ADD
    m.position = _point(*position)
    m.scale = float(scale)
    m.outline_color = _colour(rgb)
    m.filled = 1 if fill is not None else 0
    m.fill_color = _colour(fill if fill is not None else rgb, 0.8 if fill is not None else 0.0)
    m.lifetime = Duration(sec=int(lifetime_ns // 1_000_000_000), nanosec=int(lifetime_ns % 1_000_000_000))
    m.points = [_point(x, y) for x, y in points]
    return m


def _box_points(b: Sequence[float]) -> list[tuple[float, float]]:
    return [(b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])]


def image_markers(frame: Frame, results: Sequence[MonitorResult], stop: bool, config: MonitorsConfig,
                  header: Any, size: tuple[int, int], lifetime_ns: int,
                  truth: ov.TruthStyle | None = ov.DEFAULT_TRUTH) -> list[Any]:
    """The ImageMarker messages of one frame (see the module docstring); ``size`` = (width, height) of its image."""
    out = []
    for i, (name, poly) in enumerate(sorted(ov.region_polygons(frame, config, size).items())):
        colour = {"warning": ov.WARNING_FILL, "danger": ov.DANGER, "stop": ov.STOP}.get(name, ov.TRACK)
        out.append(_marker(header, "regions", i, POLYGON, colour, lifetime_ns, np.asarray(poly).tolist()))
    from perception_safety.core.labels import LabelMatcher

    watched = LabelMatcher(config.plausibility.watched_classes + config.stop_region.watched_classes)
    if truth is not None and frame.ground_truth:
        missed, false = ov.truth_marks(frame, truth)
        for i, g in enumerate(frame.ground_truth):
            out.append(_marker(header, "ground_truth", i, POLYGON, ov.MISSED if missed[i] else ov.TRUTH, lifetime_ns,
                               _box_points(g.box.as_tuple()), scale=3.0 if missed[i] else 1.0))
        colours = [ov.FALSE_DET if f else ov.MATCHED for f in false]
    else:
        colours = [ov.WATCHED if watched(d.class_id) else ov.OTHER for d in frame.detections]
    for k, (d, c) in enumerate(zip(frame.detections, colours, strict=True)):
        out.append(_marker(header, "detections", k, POLYGON, c, lifetime_ns, _box_points(d.box.as_tuple())))
    r = max(8.0, size[1] / 40.0)
    go = ov.DANGER if stop else ov.LEVEL_COLOURS[Level.OK]
    out.append(_marker(header, "verdict", 0, CIRCLE, go, lifetime_ns, position=(size[0] - 2 * r, 2 * r), scale=r,
                       fill=go))
    for j, res in enumerate(results, start=1):
        colour = ov.DANGER if res.alarm else ov.LEVEL_COLOURS.get(Level(res.level), ov.TRACK)
        out.append(_marker(header, "verdict", j, CIRCLE, colour, lifetime_ns,
                           position=(size[0] - 2 * r, 2 * r + j * 1.6 * r), scale=r / 2, fill=colour))
    return out
