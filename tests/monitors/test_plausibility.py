"""Plausibility (ghost-detection) monitor: pop-ups in the danger region alarm, walk-ins do not."""

from __future__ import annotations

import numpy as np

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame
from perception_safety.monitors.config import PlausibilityConfig
from perception_safety.monitors.plausibility import PlausibilityMonitor

# paper regions on its 1280x720 camera: warning x 274..1007, y 468..720; danger x 385..895, y 470..720
CAMERA = Intrinsics.from_fov(1280, 720, 90.0)


def _frame(k: int, *boxes: tuple[float, float, float, float], cls: str = "person") -> Frame:
    return Frame(k, detections=tuple(Detection(Box(*b), cls, 0.9) for b in boxes), camera=CAMERA)


def _ped(cx: float, cy: float = 600.0) -> tuple[float, float, float, float]:
    return (cx - 20, cy - 50, cx + 20, cy + 50)


def test_box_popping_up_in_danger_region_alarms() -> None:
    mon = PlausibilityMonitor()
    assert not mon.update(_frame(0)).alarm
    assert not mon.update(_frame(1)).alarm
    res = mon.update(_frame(2, _ped(640)))
    assert res.alarm and res.values["ghosts"] == 1.0
    assert "ghost person in danger region" in res.reasons[0]


def test_pedestrian_walking_in_through_the_warning_region_does_not_alarm() -> None:
    mon = PlausibilityMonitor()
    # starts left of the warning region (x < 274), walks right 10 px per frame deep into danger
    results = [mon.update(_frame(k, _ped(200 + 10 * k))) for k in range(50)]
    assert not any(r.alarm for r in results)
    assert results[-1].values["tracks"] == 1.0
    # it really was inside the danger region at the end (x centre 690)
    assert 385 < 200 + 10 * 49 < 895


def test_pedestrian_appearing_in_the_warning_band_then_entering_danger_is_fine() -> None:
    mon = PlausibilityMonitor()
    mon.update(_frame(0))
    # first seen at x=330: inside the warning region, left of the danger region (box 310..350 < 385)
    results = [mon.update(_frame(k, _ped(330 + 8 * (k - 1)))) for k in range(1, 20)]
    assert not any(r.alarm for r in results)


def test_first_frame_is_warmup_unless_configured() -> None:
    assert not PlausibilityMonitor().update(_frame(0, _ped(640))).alarm
    assert PlausibilityMonitor(PlausibilityConfig(warmup_frames=0)).update(_frame(0, _ped(640))).alarm


def test_unwatched_class_and_low_score_do_not_alarm() -> None:
    mon = PlausibilityMonitor(PlausibilityConfig(min_score=0.95))
    mon.update(_frame(0))
    assert not mon.update(_frame(1, _ped(640), cls="car")).alarm
    assert not mon.update(_frame(2, _ped(700))).alarm  # score 0.9 < 0.95: ignored


def test_track_expires_after_history_frames() -> None:
    cfg = PlausibilityConfig(history_frames=3)
    mon = PlausibilityMonitor(cfg)
    for k in range(5):
        mon.update(_frame(k, _ped(600)))
    # unseen for 2 frames, then back at the same place: the track is alive, no alarm
    mon.update(_frame(5))
    mon.update(_frame(6))
    assert not mon.update(_frame(7, _ped(600))).alarm
    # unseen for 3 frames: the track expired, the re-appearance is a ghost
    for k in (8, 9, 10):
        mon.update(_frame(k))
    assert mon.update(_frame(11, _ped(600))).alarm


def test_ghost_beside_a_tracked_pedestrian_still_alarms() -> None:
    mon = PlausibilityMonitor()
    for k in range(10):
        mon.update(_frame(k, _ped(300 + 5 * k)))
    res = mon.update(_frame(10, _ped(350), _ped(800)))
    assert res.alarm and res.values["ghosts"] == 1.0 and "(780.0, 550.0, 820.0, 650.0)" in res.reasons[0]


def test_jump_faster_than_bound_is_flagged() -> None:
    cfg = PlausibilityConfig(max_jump_px_per_frame=30.0, association_distance_px=100.0, px_image_size=(1280, 720))
    mon = PlausibilityMonitor(cfg)
    mon.update(_frame(0, _ped(300)))
    assert not mon.update(_frame(1, _ped(320))).alarm  # 20 px/frame
    res = mon.update(_frame(2, _ped(390)))  # 70 px in one frame, associated by distance (<= 100)
    assert res.alarm and res.values["jumps"] == 1.0 and "jumped 70.0 px/frame" in res.reasons[0]
    quiet = PlausibilityMonitor(cfg.model_copy(update={"alarm_on_jump": False}))
    quiet.update(_frame(0, _ped(300)))
    r = quiet.update(_frame(1, _ped(370)))
    assert not r.alarm and r.values["jumps"] == 1.0 and r.reasons


def test_boxes_outside_the_image_are_flagged() -> None:
    mon = PlausibilityMonitor(PlausibilityConfig(image_size=(1280, 720)))
    res = mon.update(_frame(0, (1200, 100, 1300, 200), cls="car"))
    assert res.alarm and res.values["outside"] == 1.0
    assert not mon.update(_frame(1, (1200, 100, 1281, 200), cls="car")).alarm  # within 2 px tolerance
    img = Frame(2, detections=(Detection(Box(-10, 5, 20, 30), "car"),), image=np.zeros((100, 100, 3), np.uint8))
    assert mon.update(img).values["outside"] == 1.0  # image size taken from the frame


def test_reset_forgets_tracks_and_is_deterministic() -> None:
    seq = [_frame(k, _ped(200 + 15 * k)) for k in range(30)] + [_frame(30, _ped(200 + 15 * 30), _ped(500, 650))]
    mon = PlausibilityMonitor()
    first = [mon.update(f) for f in seq]
    mon.reset()
    second = [mon.update(f) for f in seq]
    assert first == second
    assert first[-1].alarm


def test_plausibility_work_per_frame_is_bounded():
    """3000 watched boxes: at most max_detections judged, at most max_tracks kept, reasons capped."""
    from perception_safety.core.types import Box, Detection, Frame
    from perception_safety.monitors.config import PlausibilityConfig
    from perception_safety.monitors.plausibility import MAX_REASONS, PlausibilityMonitor

    mon = PlausibilityMonitor(PlausibilityConfig(image_size=(1280, 720), max_detections=64, max_tracks=100))
    import numpy as np

    rng = np.random.default_rng(2)
    for k in range(2):
        xy = rng.uniform((0, 0), (1200, 650), size=(3000, 2))
        scores = rng.uniform(0.1, 0.9, size=3000)
        scores[:64] = 0.95 + 0.0001 * np.arange(64)  # the 64 judged ones
        dets = tuple(Detection(Box(x, y, x + 40.0, y + 60.0), "person", float(s))
                     for (x, y), s in zip(xy, scores, strict=True))
        r = mon.update(Frame(stamp_ns=k, detections=dets))
        assert r.values["tracks"] <= 100
        assert len(r.reasons) <= MAX_REASONS + 2
        assert any("3000 watched detections: judged the 64 highest-scoring" in x for x in r.reasons)
    assert r.level >= 1


def test_pixel_distances_are_the_papers_on_1280x720_and_scale_with_the_image_width() -> None:
    """Defaults: 40, 80, 50 and 2 px on the paper's 1280-px-wide camera, exactly; on a 640x480 camera half of each
    (the same angles with the same horizontal field of view), on 1920x1080 one and a half."""
    from perception_safety.monitors.regions.resolve import CameraInUse

    mon = PlausibilityMonitor()
    paper = mon.regions.get(CameraInUse((1280, 720)))
    assert (paper.gate, paper.jump, paper.tolerance) == (80.0, 50.0, 2.0)
    assert paper.warning == (274 - 40.0, 468 - 40.0, 1007 + 40.0, 720 + 40.0)
    vga = mon.regions.get(CameraInUse((640, 480)))
    assert (vga.gate, vga.jump, vga.tolerance) == (40.0, 25.0, 1.0)
    assert vga.warning[0] == 0.2140625 * 640 - 20.0
    hd = mon.regions.get(CameraInUse((1920, 1080)))
    assert (hd.gate, hd.jump, hd.tolerance) == (120.0, 75.0, 3.0)


def test_the_same_motion_is_a_jump_on_a_smaller_image() -> None:
    """30 px/frame is within the 50 px bound at 1280 px width, but on a 640-px image it is 60 px/frame of the paper's
    camera: beyond the scaled 25 px bound."""
    vga = Intrinsics.from_fov(640, 480, 90.0)

    def run(camera: Intrinsics) -> list:
        mon = PlausibilityMonitor()
        return [mon.update(Frame(k, detections=(Detection(Box(*_ped(150 + 30 * k, 400)), "person", 0.9),),
                                 camera=camera)) for k in range(3)]

    assert not any(r.values["jumps"] for r in run(CAMERA))
    small = run(vga)
    assert small[1].values["jumps"] == 1.0 and small[1].reasons == ("person jumped 30.0 px/frame (bound 25)",)


def test_pixel_distances_need_the_image_they_were_chosen_for() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"max_jump_px_per_frame need px_image_size: \[width, height\]"):
        PlausibilityConfig.model_validate({"max_jump_px_per_frame": 30.0})
    cfg = PlausibilityConfig.model_validate({"max_jump_px_per_frame": 30.0, "px_image_size": [640, 480]})
    assert cfg.pixel_scale(640) == 1.0 and cfg.pixel_scale(1280) == 2.0
