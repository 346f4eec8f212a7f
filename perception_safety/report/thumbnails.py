"""Thumbnails of referenced frames: the frame seeked by stamp, drawn with the overlay (ground truth, detections,
matched/missed/false markers, regions), cropped around the object the reference is about, as small JPEGs.

Each reference carrying its frame's recording window (``log_ns``: first and last log time, collected by the per-bag
pass) is read back by seeking that window (`io.frame_seek.frames_in_windows`); one without it (results of an older
version) costs a read of its bag's non-image topics (`io.frame_seek.frames_at`, one per bag). Never more than
``limit`` frames in total, so the cost is bounded whatever the evaluation's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import cv2
import numpy as np

from perception_safety.core.types import Frame
from perception_safety.io.bag import BagError, BagTopics
from perception_safety.io.frame_seek import frames_at, frames_in_windows
from perception_safety.io.image_codec import encode_jpeg
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.report.overlay import TruthStyle, draw_overlay

WHAT = {
    "missed": "missed {label}",
    "matched": "detected {label}",
    "confused": "{label} detected as another class",
    "false_detection": "false detection '{label}'",
    "false_stop": "false stop ('{label}' detection in the stop region)",
    "missed_stop": "missed stop ({label} in the stop region)",
    "bbsl_failure": "BBSL failure on {label}",
    "alarm": "monitor alarm",
    "collision": "collision (E2), last frame before it",
}


def alt_text(ref: Mapping[str, Any]) -> str:
    """What a thumbnail shows, e.g. ``missed ped at 12.3 m, episode 004-crossing, t = 3.20 s``."""
    label = {"ped": "pedestrian"}.get(str(ref.get("label", "")), str(ref.get("label", "")) or "object")
    what = WHAT.get(str(ref.get("kind")), str(ref.get("kind"))).format(label=label)
    where = f" at {ref['distance_m']:.1f} m" if ref.get("distance_m") is not None else ""
    return f"{what}{where}, episode {ref.get('episode', '?')}, t = {float(ref.get('t_s', 0.0)):.2f} s"


THUMB_TEXT = 0.42
"""OpenCV font scale of a label as seen in the thumbnail (about 9 px high)."""
MIN_WINDOW_H = 200
"""Least height (px of the full image) of the window a thumbnail is cut from, however small the object."""


def _window(shape: Sequence[int], box: Sequence[float] | None, aspect: float = 4 / 3,
            min_h: int = MIN_WINDOW_H) -> tuple[int, int, int, int]:
    """``(x0, y0, w, h)`` around ``box`` (2.2x its height, at least ``min_h`` px, clipped); the image without."""
    h, w = int(shape[0]), int(shape[1])
    if box is None:
        return 0, 0, w, h
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    ch = min(h, max(min_h, 2.2 * (box[3] - box[1])))
    cw = min(w, ch * aspect)
    x0 = int(np.clip(cx - cw / 2, 0, w - cw))
    y0 = int(np.clip(cy - ch / 2, 0, h - ch))
    return x0, y0, int(cw), int(ch)


def draw_reference(frame: Frame, ref: Mapping[str, Any], monitors: MonitorsConfig, truth: TruthStyle,
                   width: int = 240, crop: bool = True, full_size: tuple[int, int] | None = None,
                   min_h: int = MIN_WINDOW_H) -> bytes:
    """`draw_picture` encoded: JPEG for a cropped thumbnail, PNG for a whole frame (with the legend)."""
    return encode_picture(draw_picture(frame, ref, monitors, truth, width, crop, full_size, min_h), crop)


def encode_picture(img: np.ndarray, crop: bool = True) -> bytes:
    """A drawn picture as a file: JPEG (quality 72) for a thumbnail, PNG for a whole frame."""
    if crop:
        return encode_jpeg(img, 72)
    return cv2.imencode(".png", cv2.cvtColor(img, cv2.COLOR_RGB2BGR))[1].tobytes()


def draw_picture(frame: Frame, ref: Mapping[str, Any], monitors: MonitorsConfig, truth: TruthStyle,
                 width: int = 240, crop: bool = True, full_size: tuple[int, int] | None = None,
                 min_h: int = MIN_WINDOW_H) -> np.ndarray:
    """One referenced frame drawn (RGB) and (with ``crop``) cut around the reference's box (a window at least
    ``min_h`` px tall), ``width`` px wide (0: as large as the window).

    Labels are drawn at the size they will have in the picture (the overlay's text scaled by the shrink factor).
    ``full_size`` (width, height): the image was decoded smaller (`frames_in_windows` ``coarse``); the window, the
    labels and the picture's size are those of the full image. Only the window is drawn (`draw_overlay` ``window``).
    """
    assert frame.image is not None
    full_h, full_w = (full_size[1], full_size[0]) if full_size else frame.image.shape[:2]
    x0, y0, cw, ch = _window((full_h, full_w), ref.get("box") if crop else None, min_h=min_h)
    width = width or cw
    shrink = cw / width
    sx, sy = frame.image.shape[1] / full_w, frame.image.shape[0] / full_h
    left, top = round(x0 * sx), round(y0 * sy)
    cut = (left, top, round((x0 + cw) * sx) - left, round((y0 + ch) * sy) - top)
    img = draw_overlay(frame, (), monitors, None, None, truth=truth, legend=not crop,
                       text_scale=max(0.5, shrink * THUMB_TEXT / (0.8 * max(0.3, full_h / 900))), full_size=full_size,
                       window=cut)
    size = (width, max(1, round(ch / shrink)))
    if img.shape[1::-1] != size:
        img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    return img


@dataclass(frozen=True, eq=False)
class Thumb:
    """A reference and its picture (RGB, as drawn; None when the bag or the image could not be read: ``missing``
    says why); ``seeked``: read by its recording window (False: its bag's non-image topics were read whole);
    ``crop``: a thumbnail cut around the object (else the whole frame)."""

    ref: Mapping[str, Any]
    picture: np.ndarray | None
    missing: str = ""
    seeked: bool = False
    crop: bool = True

    @property
    def alt(self) -> str:
        return alt_text(self.ref)

    @cached_property
    def jpeg(self) -> bytes | None:
        """The picture as a file (`encode_picture`: JPEG for a thumbnail, PNG for a whole frame), encoded once when
        asked (the report's strips put several pictures in one file instead)."""
        return None if self.picture is None else encode_picture(self.picture, self.crop)


def _window_of(ref: Mapping[str, Any]) -> tuple[int, int] | None:
    """The reference's recording window, or None (absent or not two ordered int64 log times: read the bag)."""
    w = ref.get("log_ns")
    if not isinstance(w, (list, tuple)) or len(w) != 2 or not all(type(v) is int for v in w):
        return None
    lo, hi = w
    return (lo, hi) if -(2**63) <= lo <= hi < 2**63 - 1 else None


def _shrink(refs: Sequence[Mapping[str, Any]], widths: Sequence[int], crop: bool,
            full: dict[tuple[str, int], tuple[int, int]], min_hs: Sequence[int]):
    """(bag, stamp, image size) -> how many times smaller than the image the frame is shown at least: the
    smallest crop window / width over the references to it (`draw_reference`; 1 for a whole frame at full size).
    Each image's full size is noted in ``full``."""
    uses: dict[tuple[str, int], list[tuple[Any, int, int]]] = {}
    for r, w, h in zip(refs, widths, min_hs, strict=False):
        uses.setdefault((str(r["bag"]), int(r["stamp_ns"])), []).append((r.get("box") if crop else None, w, h))

    def shrink(bag: str, stamp: int, size: tuple[int, int]) -> float:
        full[(bag, stamp)] = size
        return min((_window((size[1], size[0]), box, min_h=h)[2] / w if w else 1.0
                    for box, w, h in uses[(bag, stamp)]), default=1.0)

    return shrink


def read_referenced(refs: Sequence[Mapping[str, Any]], topics: BagTopics, tolerance_ns: int = 0,
                    widths: Sequence[int] | None = None, crop: bool = True, full: dict | None = None,
                    min_hs: Sequence[int] | None = None
                    ) -> tuple[dict[tuple[str, int], Frame], dict[str, str], set[tuple[str, int]]]:
    """The frames of ``refs`` by (bag, stamp), each bag opened once: those with a recording window by seeking it,
    the others by reading the bag (module docstring); also why a bag could not be read and which frames were
    seeked. With ``widths`` (and the windows' least heights ``min_hs``) a JPEG is decoded at the coarsest scale its
    pictures at those widths allow (`frames_in_windows` ``coarse``), its full size noted in ``full``."""
    heights = min_hs if min_hs is not None else [MIN_WINDOW_H] * len(refs)
    shrink = _shrink(refs, widths, crop, full if full is not None else {}, heights) if widths is not None else None
    by_bag: dict[str, dict[int, tuple[int, int] | None]] = {}
    for r in refs:
        stamps = by_bag.setdefault(str(r["bag"]), {})
        key = int(r["stamp_ns"])
        stamps[key] = stamps.get(key) or _window_of(r)
    frames: dict[tuple[str, int], Frame] = {}
    errors: dict[str, str] = {}
    seeked: set[tuple[str, int]] = set()
    for bag, stamps in by_bag.items():
        windows = {s: w for s, w in stamps.items() if w is not None}
        whole = [s for s, w in stamps.items() if w is None]
        try:
            coarse = (lambda s, size, b=bag: shrink(b, s, size)) if shrink is not None else None
            got = frames_in_windows(bag, windows, topics, tolerance_ns, coarse=coarse) if windows else {}
            seeked.update((bag, s) for s in got)
            if whole:
                got.update(frames_at(bag, whole, topics, tolerance_ns, coarse=coarse))
        except (BagError, OSError) as exc:
            errors[bag] = str(exc)
            continue
        frames.update({(bag, s): f for s, f in got.items()})
    return frames, errors, seeked


def thumbnails(refs: Sequence[Mapping[str, Any]], topics: BagTopics, monitors: MonitorsConfig, truth: TruthStyle,
               limit: int = 200, width: int | Sequence[int] = 240, tolerance_ns: int = 0,
               crop: bool = True, min_h: int | Sequence[int] = MIN_WINDOW_H) -> list[Thumb]:
    """Pictures of ``refs`` (at most ``limit`` frames read), in the order given (`draw_reference`); ``width`` and
    the window's least height ``min_h``: one for all or one per reference."""
    widths = [width] * len(refs) if isinstance(width, int) else list(width)
    heights = [min_h] * len(refs) if isinstance(min_h, int) else list(min_h)
    full: dict[tuple[str, int], tuple[int, int]] = {}
    frames, errors, seeked = read_referenced(refs[:limit], topics, tolerance_ns, widths[:limit], crop, full,
                                             heights[:limit])
    out = []
    for i, r in enumerate(refs):
        key = (str(r["bag"]), int(r["stamp_ns"]))
        f = frames.get(key)
        if i >= limit:
            out.append(Thumb(r, None, f"beyond the thumbnail limit ({limit})"))
        elif f is None:
            out.append(Thumb(r, None, errors.get(key[0], "frame not found in the bag")))
        elif f.image is None:
            out.append(Thumb(r, None, "the frame has no image", key in seeked))
        else:
            size = full.get(key)
            size = size if size is not None and tuple(f.image.shape[1::-1]) != size else None  # decoded coarse
            out.append(Thumb(r, draw_picture(f, r, monitors, truth, widths[i], crop, size, heights[i]),
                             seeked=key in seeked, crop=crop))
    return out
