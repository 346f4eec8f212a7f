"""What the monitors see, drawn on the camera frame: detections, stop/warning/danger regions, the plausibility
monitor's tracks and ghosts, each monitor's verdict and a legend. With ground truth in the frame, its boxes too,
matched one-to-one to the detections (`core.match_boxes`): missed objects and false detections are marked.
One drawing for the node's ``~/overlay`` topic, for ``perception-safety render`` (a bag to a video) and for the
report's evidence thumbnails, so a reviewer watches exactly what the node would publish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from perception_safety.core.matching import match_boxes
from perception_safety.core.types import Box, Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import MonitorsConfig

# RGB colours
WARNING_FILL = (255, 200, 0)
DANGER = (230, 30, 30)
STOP = (255, 120, 0)
WATCHED = (0, 220, 255)
OTHER = (60, 220, 60)
GHOST = (255, 0, 255)
TRACK = (200, 200, 200)
TRUTH = (255, 255, 255)
MISSED = (255, 40, 40)
MATCHED = (60, 220, 60)
FALSE_DET = (255, 110, 200)
LEVEL_COLOURS = {Level.OK: (40, 180, 40), Level.WARN: (240, 190, 0), Level.ERROR: (230, 30, 30),
                 Level.STALE: (140, 140, 140)}
FONT = cv2.FONT_HERSHEY_SIMPLEX


@dataclass(frozen=True)
class OverlayState:
    """The plausibility monitor's view after the frame: ghost boxes ``(n, 4)``, track boxes ``(m, 4)``, ids and
    whether each track was seen near the warning region (explained)."""

    ghosts: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    tracks: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    track_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    track_explained: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


def state_of(monitor: object) -> OverlayState:
    """The overlay state of a plausibility monitor (anything with ``last_ghosts`` and ``track_view``)."""
    ghosts = getattr(monitor, "last_ghosts", None)
    view = getattr(monitor, "track_view", None)
    if ghosts is None or view is None:
        return OverlayState()
    boxes, ids, near = view()
    return OverlayState(np.asarray(ghosts, dtype=np.float64).reshape(-1, 4), boxes, ids, near)


_FAR = float(1 << 24)
"""Drawing coordinates are clipped to +-2^24 px: a box at 1e308 (finite, legal) is drawn to the image edge, not
handed to OpenCV as an integer it cannot hold."""


def _clip(v: float) -> float:
    return min(max(float(v), -_FAR), _FAR)


def _pt(x: float, y: float) -> tuple[int, int]:
    return round(_clip(x)), round(_clip(y))


def _scale(h: int) -> tuple[float, int]:
    """Font scale and line thickness for an image of height ``h`` (readable from 128x72 to 1080p)."""
    s = max(0.3, h / 900.0)
    return s, max(1, round(h / 480.0))


def _label(img: np.ndarray, text: str, x: float, y: float, colour: tuple[int, int, int], scale: float,
           thick: int) -> None:
    (tw, th), base = cv2.getTextSize(text, FONT, scale, thick)
    x0, y0 = int(max(0, min(_clip(x), img.shape[1] - tw))), int(max(th + base, _clip(y)))
    cv2.rectangle(img, (x0, y0 - th - base), (x0 + tw, y0), (0, 0, 0), -1)
    cv2.putText(img, text, (x0, y0 - base), FONT, scale, colour, thick, cv2.LINE_AA)


def _box(img: np.ndarray, b: Sequence[float], colour: tuple[int, int, int], thick: int) -> None:
    cv2.rectangle(img, _pt(b[0], b[1]), _pt(b[2], b[3]), colour, thick, cv2.LINE_8)


def scaled_frame(frame: Frame, sx: float, sy: float) -> Frame:
    """``frame`` with its detections' and ground truth's boxes scaled (for an image decoded smaller)."""
    def box(b: Box) -> Box:
        return Box(b.x_min * sx, b.y_min * sy, b.x_max * sx, b.y_max * sy)

    return replace(frame, detections=tuple(replace(d, box=box(d.box)) for d in frame.detections),
                   ground_truth=tuple(replace(g, box=box(g.box)) for g in frame.ground_truth))


def tint_region(img: np.ndarray, poly: np.ndarray, colour: tuple[int, int, int], alpha: float) -> None:
    """Blend ``colour`` into ``img`` inside the polygon (weight ``alpha``), in place, working only on the
    polygon's bounding box (outside it the blend of a pixel with itself is the pixel: the same picture as blending
    a tinted copy of the whole image, for a fraction of the copying)."""
    x0, y0 = np.maximum(poly.min(axis=0), 0)
    x1, y1 = np.minimum(poly.max(axis=0) + 1, (img.shape[1], img.shape[0]))
    if x1 <= x0 or y1 <= y0:
        return
    roi = img[y0:y1, x0:x1]
    tint = roi.copy()
    cv2.fillPoly(tint, [poly - np.array([x0, y0], dtype=np.int32)], colour)
    cv2.addWeighted(tint, alpha, roi, 1.0 - alpha, 0.0, dst=roi)


def region_polygons(frame: Frame, config: MonitorsConfig, size: tuple[int, int]) -> dict[str, np.ndarray]:
    """The regions' polygons (pixels) on an image of ``size`` (width, height); shared with `ros.annotations`."""
    from perception_safety.monitors.regions.outline import region_outlines
    from perception_safety.monitors.regions.resolve import CameraInUse

    camera = CameraInUse(size, frame.camera if frame.camera is not None and frame.camera.size == size else None)
    return region_outlines(config, camera, frame.ego.speed if frame.ego is not None else None)[0]


def _outlines(frame: Frame, config: MonitorsConfig, img: np.ndarray) -> dict[str, np.ndarray]:
    """The regions' polygons on this image (a region that does not fit the camera is not drawn: the monitors
    report it as a configuration error)."""
    return region_polygons(frame, config, (int(img.shape[1]), int(img.shape[0])))


@dataclass(frozen=True)
class TruthStyle:
    """How detections are matched to the frame's ground truth for the markers (the evaluation's rule)."""

    iou_threshold: float = 0.5
    class_aware: bool = False


DEFAULT_TRUTH = TruthStyle()
"""The evaluation's default matching (IoU 0.5, class-agnostic)."""


def truth_marks(frame: Frame, style: TruthStyle) -> tuple[list[bool], list[bool]]:
    """``(missed per ground-truth object, false per detection)`` by the evaluation's matching rule; the one source
    of the markers of the drawn overlay and of the viewer annotations (`ros.annotations`)."""
    m = match_boxes(frame.detection_boxes(), frame.ground_truth_boxes(), style.iou_threshold,
                    [d.class_id for d in frame.detections], [g.class_id for g in frame.ground_truth], style.class_aware)
    false = set(m.unmatched_detections.tolist())
    return [bool(h < 0) for h in m.detection_for_gt()], [k in false for k in range(len(frame.detections))]


def _draw_truth(img: np.ndarray, frame: Frame, style: TruthStyle, scale: float, thick: int) -> set[str]:
    """Ground truth (white; missed: red, with its distance), detections matched (green) or false (pink)."""
    missed, false_det = truth_marks(frame, style)
    shown = {"ground truth"}
    for i, g in enumerate(frame.ground_truth):
        b = g.box.as_tuple()
        if missed[i]:
            _box(img, b, MISSED, thick * 2)
            _label(img, f"MISSED {g.class_id} {g.distance:.1f} m", b[0], b[3] + 16 * scale, MISSED, scale * 0.8, 1)
            shown.add("missed")
        else:
            _box(img, (b[0] - thick, b[1] - thick, b[2] + thick, b[3] + thick), TRUTH, 1)
            _label(img, f"{g.distance:.1f} m", b[0], b[3] + 16 * scale, TRUTH, scale * 0.7, 1)
    false = {k for k, f in enumerate(false_det) if f}
    for k, d in enumerate(frame.detections):
        b = d.box.as_tuple()
        colour = FALSE_DET if k in false else MATCHED
        _box(img, b, colour, thick)
        _label(img, f"{'FALSE ' if k in false else ''}{d.class_id} {d.score:.2f}", b[0], b[1] - 2, colour,
               scale * 0.8, 1)
    shown |= {"false detection"} if false else set()
    shown |= {"matched detection"} if len(false) < len(frame.detections) else set()
    return shown


LEGEND = {
    "ground truth": TRUTH,
    "missed": MISSED,
    "matched detection": MATCHED,
    "false detection": FALSE_DET,
    "detection (watched class)": WATCHED,
    "detection (other class)": OTHER,
    "ghost (plausibility)": GHOST,
    "track": TRACK,
    "warning region": WARNING_FILL,
    "danger region": DANGER,
    "stop region": STOP,
}


def draw_legend(img: np.ndarray, entries: Sequence[str], scale: float) -> None:
    """A box of colour swatches and names at the bottom right (only what the picture shows)."""
    if not entries:
        return
    s = scale * 0.7
    (tw, th), base = cv2.getTextSize(max(entries, key=len), FONT, s, 1)
    line = th + base + 4
    w, h = tw + 3 * line // 2 + 12, line * len(entries) + 8
    x0, y0 = img.shape[1] - w - 4, img.shape[0] - h - 4
    sub = img[y0:y0 + h, x0:x0 + w]
    sub[:] = (sub * 0.35).astype(np.uint8)
    for i, name in enumerate(entries):
        y = y0 + 6 + i * line
        cv2.rectangle(img, (x0 + 6, y + 2), (x0 + 6 + line - 6, y + line - 4), LEGEND[name], -1)
        cv2.putText(img, name, (x0 + line + 6, y + th + 1), FONT, s, (255, 255, 255), 1, cv2.LINE_AA)


def draw_overlay(
    frame: Frame,
    results: Sequence[MonitorResult],
    config: MonitorsConfig,
    state: OverlayState | None = None,
    stop: bool | None = None,
    size: tuple[int, int] = (1280, 720),
    truth: TruthStyle | None = DEFAULT_TRUTH,
    legend: bool = True,
    text_scale: float = 1.0,
    full_size: tuple[int, int] | None = None,
    window: tuple[int, int, int, int] | None = None,
) -> np.ndarray:
    """An HxWx3 RGB uint8 picture of one frame's monitoring (the frame's image, or grey ``size`` without one).

    ``text_scale`` enlarges labels and lines (for a picture that will be shown scaled down, e.g. a thumbnail).
    ``full_size`` (width, height): the frame's image was decoded smaller than that (a thumbnail's coarse decode):
    boxes, regions, labels and lines are placed and sized for the full image and drawn scaled to this one.
    ``window`` ``(x0, y0, w, h)`` (pixels of this image): only that part of the picture is wanted (a thumbnail's
    crop) and returned: the same pixels as the whole picture cut there, for a copy of that part of the image only
    (`_canvas`).

    With ``truth`` and ground truth in the frame, detections are drawn as matched/false and objects as found/missed;
    otherwise detections are coloured by whether the monitors watch their class.
    """
    state = state or OverlayState()
    img = _canvas(frame, size, window)
    h = img.shape[0]
    full_w, full_h = full_size or (img.shape[1], h)
    sx, sy = img.shape[1] / full_w, h / full_h
    scale, thick = _scale(full_h)
    scale, thick = scale * text_scale * sy, max(1, round(max(1, round(thick * text_scale)) * sy))
    # regions (resolved for this image and camera): warning translucent, danger and stop region outlined
    if full_size is None:
        outlines = _outlines(frame, config, img)
    else:
        outlines = {k: np.asarray(v, float) * (sx, sy) for k, v in region_polygons(frame, config, full_size).items()}
        frame = scaled_frame(frame, sx, sy)
    if "warning" in outlines:
        poly = np.round(outlines["warning"]).astype(np.int32)
        tint_region(img, poly, WARNING_FILL, 0.18)
        cv2.polylines(img, [poly], True, WARNING_FILL, thick, cv2.LINE_8)
    if "danger" in outlines:
        cv2.polylines(img, [np.round(outlines["danger"]).astype(np.int32)], True, DANGER, thick, cv2.LINE_8)
    for key in ("stop", "stop_corridor"):
        if key in outlines and len(outlines[key]):
            cv2.polylines(img, [np.round(outlines[key]).astype(np.int32)], True, STOP, thick, cv2.LINE_8)
    shown = [f"{name} region" for name in ("warning", "danger", "stop") if name in outlines]
    for tb, tid, ok in zip(state.tracks, state.track_ids, state.track_explained, strict=True):
        _box(img, tb, TRACK, 1)
        _label(img, f"#{int(tid)}{'' if ok else ' ?'}", tb[0], tb[3] + 14 * scale, TRACK, scale * 0.8, 1)
    shown += ["track"] if len(state.tracks) else []
    if truth is not None and frame.ground_truth:
        marks = _draw_truth(img, frame, truth, scale, thick)
        shown = [k for k in LEGEND if k in marks] + shown
    else:
        from perception_safety.core.labels import LabelMatcher

        watched = LabelMatcher(config.plausibility.watched_classes + config.stop_region.watched_classes)
        for d in frame.detections:
            colour = WATCHED if watched(d.class_id) else OTHER
            b = d.box.as_tuple()
            _box(img, b, colour, thick)
            _label(img, f"{d.class_id} {d.score:.2f}", b[0], b[1] - 2, colour, scale * 0.8, 1)
        kinds = {"detection (watched class)" if watched(d.class_id) else "detection (other class)"
                 for d in frame.detections}
        shown = [k for k in LEGEND if k in kinds] + shown
    for g in state.ghosts:
        _box(img, g, GHOST, thick * 2)
        _label(img, "GHOST", g[0], g[3] + 30 * scale, GHOST, scale, thick)
    shown += ["ghost (plausibility)"] if len(state.ghosts) else []
    # verdict panel, top left: one line per monitor
    y = 2.0
    (_, line_h), line_base = cv2.getTextSize("Ag", FONT, scale, thick)
    for r in results:
        value = ""
        if "statistic" in r.values:
            value = f" {r.values['statistic']:.0f}"
        text = f"{r.name}: {'ALARM' if r.alarm else Level(r.level).name}{value}"
        y += line_h + line_base + 3
        _label(img, text, 4, y, LEVEL_COLOURS.get(Level(r.level), TRACK), scale, thick)
    if stop is not None:
        text = "STOP" if stop else "drive"
        (tw, _), _ = cv2.getTextSize(text, FONT, scale * 1.6, thick + 1)
        _label(img, text, img.shape[1] - tw - 6, 34 * scale + 6, DANGER if stop else LEVEL_COLOURS[Level.OK],
               scale * 1.6, thick + 1)
    _label(img, f"t = {frame.stamp_ns / 1e9:.3f} s", 4, h - 4, (255, 255, 255), scale * 0.8, 1)
    if legend:
        draw_legend(img, shown, scale)
    if window is None:
        return img
    x0, y0, w, h = window
    return img[y0:y0 + h, x0:x0 + w].copy()


def _canvas(frame: Frame, size: tuple[int, int], window: tuple[int, int, int, int] | None) -> np.ndarray:
    """What the overlay is drawn on: a copy of the frame's image (grey ``size`` without one); with ``window``, an
    image-sized canvas holding the image inside the window only. Everything is drawn on the whole canvas (OpenCV
    clips lines and polygons at its edges, so a smaller canvas would rasterise edges crossing it differently) and
    every drawing step sets a pixel from that pixel alone, so inside the window the pixels are the whole picture's
    (tested); outside it they are never looked at."""
    if frame.image is None:
        return np.full((size[1], size[0], 3), 64, np.uint8)
    image = frame.image if frame.image.ndim == 3 else np.repeat(frame.image[..., None], 3, 2)
    if window is None:
        return np.array(image, order="C", copy=True)
    x0, y0, w, h = window
    img = np.empty(image.shape, image.dtype)
    img[y0:y0 + h, x0:x0 + w] = image[y0:y0 + h, x0:x0 + w]
    return img
