"""The stop rule on many frames at once (`StopRegionMonitor.judge`) decides what the rule decides frame by frame.

The reference is the rule written out per frame and per box in this file (the rectangle's overlap area in plain
arithmetic, the corridor through `Corridor.inside` of one box at the frame's speed), on random scenes: watched and
unwatched labels, scores at the threshold, boxes touching the rectangle's edges or cut by the image's bottom, ego
speeds with and without braking, frames on other cameras (several placements in one batch) and frames whose
camera cannot carry the rule (the judgement stops there, with the per-frame error).
"""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core.camera import Intrinsics
from perception_safety.core.labels import LabelMatcher
from perception_safety.core.types import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.evaluation.evidence import EvidenceCollector, FrameRef, collect_stops
from perception_safety.monitors.config import MonitorsConfig, StopRegionConfig
from perception_safety.monitors.regions.forms import CameraMount
from perception_safety.monitors.regions.resolve import RegionError, camera_in_use
from perception_safety.monitors.stop_region import StopRegionMonitor, stop_geometry

W, H = 1280, 720
CAMERA = Intrinsics.from_fov(W, H, 90.0)
OTHER = Intrinsics.from_fov(640, 480, 70.0)
LABELS = ("person", "pedestrian", "car", "human.pedestrian.adult", "bicycle")
CORRIDOR = {"half_width_m": 1.5, "near_m": 0.0, "far_m": 25.0}
BRAKING = {**CORRIDOR, "braking": {"deceleration_mps2": 6.0, "reaction_time_s": 0.5}}


def reference(cfg: StopRegionConfig, mount: CameraMount, frame: Frame) -> tuple[list[str], float | None]:
    """(reasons, corridor far edge) of the rule on one frame, box by box; `RegionError` as the rule raises it."""
    geometry = stop_geometry(cfg, mount, camera_in_use(frame, mount))
    speed = frame.ego.speed if frame.ego is not None else None
    far = geometry.corridor.spec.far_at(speed) if geometry.corridor is not None else None
    watched = LabelMatcher(cfg.watched_classes)
    truth = cfg.source == "ground_truth"
    reasons = []
    for o in frame.ground_truth if truth else frame.detections:
        if not watched(o.class_id) or (1.0 if truth else o.score) < cfg.min_score:
            continue
        b = o.box
        if geometry.corridor is not None and geometry.corridor.inside(np.array([b.as_tuple()]), speed)[0]:
            reasons.append(f"{o.class_id} box stands in the ground corridor")
        elif geometry.rect is not None:
            x0, y0, x1, y1 = geometry.rect
            area = max(0.0, min(b.x_max, x1) - max(b.x_min, x0)) * max(0.0, min(b.y_max, y1) - max(b.y_min, y0))
            if area > cfg.min_overlap_px:
                reasons.append(f"{o.class_id} box overlaps the stop region")
    return reasons, far


def _box(rng: np.random.Generator, size: tuple[int, int]) -> Box:
    w, h = size
    kind = rng.integers(0, 4)
    x0, y0 = rng.uniform(0, w - 60), rng.uniform(0, h - 60)
    x1, y1 = x0 + rng.uniform(2, 200), y0 + rng.uniform(2, 200)
    if kind == 1:  # touching the paper rectangle's left edge (274 px at 1280): zero overlap
        x1, x0 = 274.0 * w / W, 274.0 * w / W - rng.uniform(5, 50)
    elif kind == 2:  # cut by the image's bottom edge
        y1 = float(h)
    return Box(x0, y0, min(x1, w), min(y1, h))


def random_frames(rng: np.random.Generator, n: int, odd_cameras: bool) -> list[Frame]:
    frames = []
    for i in range(n):
        camera, size, image = CAMERA, (W, H), None
        if odd_cameras and rng.uniform() < 0.1:  # another CameraInfo; or an image without one (no camera model)
            camera, size = (OTHER, (640, 480)) if rng.uniform() < 0.5 else (None, (800, 600))
            image = None if camera is not None else np.zeros((600, 800, 3), np.uint8)
        elif rng.uniform() < 0.1:
            camera = None  # the mount's image size and intrinsics
        dets = tuple(Detection(_box(rng, size), str(rng.choice(LABELS)), float(rng.choice([0.3, 0.5, 0.7, 0.5, 0.9])))
                     for _ in range(rng.integers(0, 5)))  # fmt: skip
        gts = tuple(GroundTruthObject(_box(rng, size), str(rng.choice(LABELS)), float(rng.choice([4.0, 9.0, 12.5])))
                    for _ in range(rng.integers(0, 4)))  # fmt: skip
        speed = float(rng.choice([0.0, 3.0, rng.uniform(0, 15)]))
        ego = None if rng.uniform() < 0.2 else EgoState(0.0, 0.0, 0.0, speed)
        frames.append(Frame(1000 * (i // 2), dets, gts, ego, image=image, camera=camera))  # stamps tie in pairs
    return frames


def configs() -> list[tuple[StopRegionConfig, CameraMount]]:
    out = []
    mount = CameraMount(height_m=1.6, pitch_deg=-2.0, image_size=(W, H),
                        intrinsics={"fx": CAMERA.fx, "fy": CAMERA.fy, "cx": CAMERA.cx, "cy": CAMERA.cy})
    for rule, corridor in (("region", None), ("corridor", CORRIDOR), ("either", BRAKING), ("either", CORRIDOR)):
        for extra in ({}, {"min_score": 0.5, "min_overlap_px": 50.0}, {"watched_classes": ["person", "car*"]}):
            for source in ("detections", "ground_truth"):
                cfg = StopRegionConfig.model_validate({"rule": rule, "corridor": corridor, "source": source, **extra})
                out.append((cfg, mount))
    return out


@pytest.mark.parametrize("odd_cameras", [False, True])
def test_judging_many_frames_decides_what_the_rule_decides_frame_by_frame(odd_cameras):
    rng = np.random.default_rng(11)
    frames = random_frames(rng, 300, odd_cameras)
    stops = errors = 0
    for cfg, mount in configs():
        j = StopRegionMonitor(cfg, mount).judge(frames)
        for k, f in enumerate(frames):
            try:
                reasons, far = reference(cfg, mount, f)
            except RegionError as exc:
                assert j.frames == k and str(j.error) == str(exc)  # judged up to here, with the frame's error
                errors += 1
                break
            lo, hi = j.boxes.offsets[k], j.boxes.offsets[k + 1]
            texts = ["", "stands in the ground corridor", "overlaps the stop region"]
            got = [f"{j.boxes.classes[i]} box {texts[j.where[i]]}" for i in range(lo, hi) if j.where[i]]
            assert got == reasons and bool(j.alarm[k]) == bool(reasons)
            assert (np.isnan(j.far_m[k]) and far is None) or j.far_m[k] == far
            stops += bool(reasons)
        else:
            assert j.frames == len(frames) and j.error is None
    assert stops > 500  # the scenes exercise the rule, and (odd cameras) frames it cannot judge
    assert errors > 0 if odd_cameras else errors == 0


def test_one_frame_update_is_the_rule_with_its_reasons_and_values():
    rng = np.random.default_rng(5)
    for cfg, mount in configs()[::3]:
        monitor = StopRegionMonitor(cfg, mount)
        for f in random_frames(rng, 40, odd_cameras=True):
            try:
                reasons, far = reference(cfg, mount, f)
            except RegionError as exc:
                with pytest.raises(RegionError, match="^" + str(exc)[:40].replace("(", r"\(")):
                    monitor.update(f)
                continue
            res = monitor.update(f)
            assert res.alarm == bool(reasons) and list(res.reasons) == reasons
            assert res.values == {"boxes_in_region": float(len(reasons)),
                                  **({"corridor_far_m": far} if far is not None else {})}


def test_no_frames_and_frames_without_boxes():
    monitor = StopRegionMonitor(StopRegionConfig(), CameraMount(image_size=(W, H)))
    assert monitor.judge([]).frames == 0
    j = monitor.judge([Frame(0), Frame(1)])
    assert j.frames == 2 and not j.alarm.any() and j.boxes.boxes.shape == (0, 4)


def reference_stops(cfg: MonitorsConfig, frames: list[Frame]) -> EvidenceCollector:
    """The false/missed stops collected frame by frame with `reference`, as `collect_stops` did; raises the first
    frame's `RegionError` after collecting the frames before it."""
    col = EvidenceCollector(per_cell=4)
    dets = cfg.stop_region.model_copy(update={"source": "detections"})
    truth = cfg.stop_region.model_copy(update={"source": "ground_truth"})
    for f in frames:
        stop_d, stop_g = bool(reference(dets, cfg.camera, f)[0]), bool(reference(truth, cfg.camera, f)[0])
        if stop_d and not stop_g and f.detections:
            d = max(f.detections, key=lambda x: x.score)
            col.add("false_stop", FrameRef(f.stamp_ns, "false_stop", d.class_id, None, d.box.as_tuple(),
                                           f"stop on '{d.class_id}' (score {d.score:.2f}); the ground truth gives "
                                           "no stop", -d.score))
        elif stop_g and not stop_d and f.ground_truth:
            g = min(f.ground_truth, key=lambda x: x.distance)
            col.add("missed_stop", FrameRef(f.stamp_ns, "missed_stop", g.class_id, g.distance, g.box.as_tuple(),
                                            "the ground truth stops, the detections do not", g.distance))
    return col


@pytest.mark.parametrize("odd_cameras", [False, True])
def test_false_and_missed_stops_of_many_frames_are_those_of_the_frame_by_frame_rule(odd_cameras):
    rng = np.random.default_rng(7)
    frames = random_frames(rng, 400, odd_cameras)
    stops, errors = 0, 0
    for stop, mount in configs()[::2]:
        cfg = MonitorsConfig(stop_region=stop, camera=mount)
        want_error = got_error = None
        try:
            want = reference_stops(cfg, frames)
        except RegionError as exc:
            want_error = str(exc)
            want = reference_stops(cfg, frames[: next(k for k, f in enumerate(frames) if _fails(cfg, f))])
        got = EvidenceCollector(per_cell=4)
        try:
            collect_stops(got, frames, cfg)
        except RegionError as exc:
            got_error = str(exc)
        assert got_error == want_error
        assert got.to_json() == want.to_json()
        stops, errors = stops + sum(want.counts.values()), errors + (want_error is not None)
    assert stops > 100 and (errors > 0 if odd_cameras else errors == 0)


def _fails(cfg: MonitorsConfig, f: Frame) -> bool:
    try:
        stop_geometry(cfg.stop_region, cfg.camera, camera_in_use(f, cfg.camera))
    except RegionError:
        return True
    return False
