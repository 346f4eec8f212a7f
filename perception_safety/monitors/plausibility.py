"""Plausibility (ghost-detection) monitor of the SG/RH/AC paper's CARLA use case (Section III-B, module 2).

"Bounding boxes in consecutive frames must be consistent: no sudden appearance in front of the
vehicle." A short track of watched-class detections is kept (association frame to frame by IoU,
then by centre distance, both one-to-one). A detection overlapping the *danger* region alarms
when it belongs to no track that was seen in the *warning* region (grown by a margin) in the
previous ``history_frames`` frames. Also flagged: track jumps faster than ``max_jump_px_per_frame``
and boxes outside the image (or of zero area). The pixel distances are for an image ``px_image_size`` wide and scale
with the width of the camera in use.

Bounded work per frame: at most ``max_detections`` watched detections (the highest-scoring; more give a WARN
reason) are associated with at most ``max_tracks`` tracks (the most recently seen survive), so the detections x
tracks matrices hold at most 256 x 256 entries with the defaults, and at most `MAX_REASONS` reasons are listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from perception_safety.core.labels import LabelMatcher
from perception_safety.core.matching import match_boxes
from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import CameraMount, PlausibilityConfig
from perception_safety.monitors.geometry import centers, grow, intersection_areas, touches
from perception_safety.monitors.regions.resolve import CameraInUse, PerCamera, Rect, camera_in_use, rect_pixels

#: reasons listed per frame; the rest are summarised in one line (the counts are in the values)
MAX_REASONS = 20


def _fmt(box: np.ndarray) -> str:
    return "(" + ", ".join(f"{float(v):.1f}" for v in box) + ")"


@dataclass
class _Tracks:
    """Column store of live tracks (all arrays share the first dimension)."""

    boxes: np.ndarray  # (m, 4)
    classes: np.ndarray  # (m,) object
    last_seen: np.ndarray  # (m,) int64 frame index
    near_warning: np.ndarray  # (m,) bool: seen in the grown warning region so far
    ids: np.ndarray  # (m,) int64

    @classmethod
    def empty(cls) -> _Tracks:
        return cls(
            np.zeros((0, 4)), np.zeros(0, dtype=object), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64)
        )

    def __len__(self) -> int:
        return int(self.boxes.shape[0])


@dataclass(frozen=True)
class _Placed:
    """The monitor on one camera: danger region, warning region grown by the margin, and the pixel bounds (px)."""

    danger: Rect
    warning: Rect
    gate: float
    jump: float | None
    tolerance: float


class PlausibilityMonitor:
    """Ghost-detection monitor; ``update`` advances the track state, ``reset`` clears it."""

    def __init__(self, config: PlausibilityConfig | None = None, camera: CameraMount | None = None,
                 name: str = "plausibility") -> None:
        self.config = config or PlausibilityConfig()
        camera = camera or CameraMount()
        if camera.image_size is None and self.config.image_size is not None:
            camera = camera.model_copy(update={"image_size": self.config.image_size})
        self.camera = camera
        self.name = name
        self._watched = LabelMatcher(self.config.watched_classes)
        self.regions: PerCamera[_Placed] = PerCamera(self._resolve)
        self.reset()

    def _resolve(self, camera: CameraInUse) -> _Placed:
        """The regions and the pixel distances on the camera's image (distances scaled with its width)."""
        cfg = self.config
        scale = cfg.pixel_scale(camera.size[0])
        danger = rect_pixels("plausibility.danger_region", cfg.danger_region, camera)
        warning = rect_pixels("plausibility.warning_region", cfg.warning_region, camera)
        jump = None if cfg.max_jump_px_per_frame is None else cfg.max_jump_px_per_frame * scale
        return _Placed(danger, grow(warning, cfg.nearby_margin_px * scale), cfg.association_distance_px * scale, jump,
                       cfg.outside_tolerance_px * scale)

    def reset(self) -> None:
        """Forget all tracks, as at the start of an episode."""
        self._tracks = _Tracks.empty()
        self._frame_index = -1
        self._next_id = 0
        self.last_ghosts = np.zeros((0, 4))
        """boxes ``(n, 4)`` judged ghosts by the last `update` (for displays such as the overlay)"""

    def track_view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The live tracks after the last update: boxes ``(m, 4)``, ids ``(m,)``, seen near the warning region."""
        tr = self._tracks
        return tr.boxes.copy(), tr.ids.copy(), tr.near_warning.copy()

    def _associate(self, boxes: np.ndarray, classes: np.ndarray, k: int, gate: float) -> np.ndarray:
        """For each detection the index of its track or -1 (IoU first, then centre distance)."""
        tr = self._tracks
        assoc = np.full(boxes.shape[0], -1, dtype=np.int64)
        if len(tr) == 0 or boxes.shape[0] == 0:
            return assoc
        m = match_boxes(boxes, tr.boxes, self.config.association_iou, list(classes), list(tr.classes), class_aware=True)
        assoc[m.det_indices] = m.gt_indices
        free_d = np.flatnonzero(assoc < 0)
        used = np.zeros(len(tr), dtype=bool)
        used[m.gt_indices] = True
        free_t = np.flatnonzero(~used)
        if free_d.size and free_t.size and gate > 0:
            cd, ct = centers(boxes[free_d]), centers(tr.boxes[free_t])
            dist = np.linalg.norm(cd[:, None, :] - ct[None, :, :], axis=2)
            elapsed = (k - tr.last_seen[free_t]).astype(np.float64)
            ok = (dist <= gate * elapsed[None, :]) & (classes[free_d][:, None] == tr.classes[free_t][None, :])
            if ok.any():
                cost = np.where(ok, dist, 1e12)
                rows, cols = linear_sum_assignment(cost)
                keep = ok[rows, cols]
                assoc[free_d[rows[keep]]] = free_t[cols[keep]]
        return assoc

    def update(self, frame: Frame) -> MonitorResult:
        """Judge one frame's detections against the tracks of the previous frames, then advance the tracks."""
        cfg = self.config
        camera = camera_in_use(frame, self.camera)
        placed = self.regions.get(camera)
        danger_rect, warning_rect = placed.danger, placed.warning
        self._frame_index += 1
        k = self._frame_index
        reasons: list[str] = []
        dets = [d for d in frame.detections if d.score >= cfg.min_score]

        # boxes outside the image or of zero area (every class)
        n_outside = 0
        size = camera.size
        if dets:
            allb = np.array([d.box.as_tuple() for d in dets], dtype=np.float64)
            bad = (allb[:, 2] <= allb[:, 0]) | (allb[:, 3] <= allb[:, 1])
            tol = placed.tolerance
            w, h = size
            bad |= (allb[:, 0] < -tol) | (allb[:, 1] < -tol) | (allb[:, 2] > w + tol) | (allb[:, 3] > h + tol)
            for i in np.flatnonzero(bad):
                reasons.append(f"implausible box {dets[i].class_id} {_fmt(allb[i])} (outside image or empty)")
            n_outside = int(bad.sum())

        watched = [d for d in dets if self._watched(d.class_id)]
        n_dropped = max(0, len(watched) - cfg.max_detections)
        if n_dropped:
            watched = sorted(watched, key=lambda d: -d.score)[: cfg.max_detections]
        boxes = np.array([d.box.as_tuple() for d in watched], dtype=np.float64).reshape(-1, 4)
        classes = np.array([d.class_id for d in watched], dtype=object)
        assoc = self._associate(boxes, classes, k, placed.gate)
        tr = self._tracks

        in_danger = intersection_areas(boxes, danger_rect) > 0.0
        near_now = touches(boxes, warning_rect)
        matched = assoc >= 0
        explained = np.zeros(len(watched), dtype=bool)
        explained[matched] = tr.near_warning[assoc[matched]]
        ghosts = in_danger & ~explained & (k >= cfg.warmup_frames)
        for i in np.flatnonzero(ghosts):
            why = "new track" if not matched[i] else "track never seen in the warning region"
            reasons.append(f"ghost {watched[i].class_id} in danger region at {_fmt(boxes[i])} ({why})")

        n_jumps = 0
        max_speed = 0.0
        if matched.any():
            mi = np.flatnonzero(matched)
            ti = assoc[mi]
            disp = np.linalg.norm(centers(boxes[mi]) - centers(tr.boxes[ti]), axis=1)
            speed = disp / (k - tr.last_seen[ti]).astype(np.float64)
            max_speed = float(speed.max())
            if placed.jump is not None:
                jumped = speed > placed.jump
                n_jumps = int(jumped.sum())
                for j in np.flatnonzero(jumped):
                    reasons.append(f"{watched[mi[j]].class_id} jumped {speed[j]:.1f} px/frame (bound {placed.jump:g})")

        self._advance(boxes, classes, assoc, near_now, k)
        self.last_ghosts = boxes[ghosts]
        n_ghosts = int(ghosts.sum())
        if len(reasons) > MAX_REASONS:
            reasons[MAX_REASONS:] = [f"... and {len(reasons) - MAX_REASONS} more"]
        if n_dropped:
            reasons.append(f"{n_dropped + cfg.max_detections} watched detections: judged the {cfg.max_detections} "
                           f"highest-scoring (max_detections), {n_dropped} not judged")
        alarm = n_ghosts > 0 or (cfg.alarm_on_jump and n_jumps > 0) or (cfg.alarm_on_outside and n_outside > 0)
        level = Level.ERROR if alarm else (Level.WARN if reasons else Level.OK)
        values = {
            "ghosts": float(n_ghosts),
            "jumps": float(n_jumps),
            "outside": float(n_outside),
            "tracks": float(len(self._tracks)),
            "max_speed_px_per_frame": max_speed,
        }
        return MonitorResult(self.name, alarm, level, tuple(reasons), values)

    def _advance(self, boxes: np.ndarray, classes: np.ndarray, assoc: np.ndarray, near_now: np.ndarray, k: int) -> None:
        tr = self._tracks
        matched = assoc >= 0
        t_boxes, t_last, t_near = tr.boxes.copy(), tr.last_seen.copy(), tr.near_warning.copy()
        ti = assoc[matched]
        t_boxes[ti] = boxes[matched]
        t_last[ti] = k
        t_near[ti] |= near_now[matched]
        new = ~matched
        n_new = int(new.sum())
        ids = np.arange(self._next_id, self._next_id + n_new, dtype=np.int64)
        self._next_id += n_new
        boxes_all = np.concatenate([t_boxes, boxes[new]])
        classes_all = np.concatenate([tr.classes, classes[new]])
        last_all = np.concatenate([t_last, np.full(n_new, k, np.int64)])
        near_all = np.concatenate([t_near, near_now[new]])
        ids_all = np.concatenate([tr.ids, ids])
        alive = k - last_all < self.config.history_frames
        if int(alive.sum()) > self.config.max_tracks:
            # keep the most recently seen tracks (stable: among equals, the older track id first)
            order = np.flatnonzero(alive)[np.argsort(-last_all[alive], kind="stable")]
            alive = np.zeros_like(alive)
            alive[order[: self.config.max_tracks]] = True
        self._tracks = _Tracks(boxes_all[alive], classes_all[alive], last_all[alive], near_all[alive], ids_all[alive])
