"""The monitoring overlay (node ~/overlay and `render`): what is drawn where, and the video of a bag."""

from __future__ import annotations

import cv2
import numpy as np

from perception_safety.core.types import Box, Detection, Frame
from perception_safety.monitors.base import Level, MonitorResult
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.report.overlay import DANGER, GHOST, WATCHED, OverlayState, draw_overlay

W, H = 320, 180
PX = {"units": "px", "image_size": [W, H]}
CFG = MonitorsConfig.model_validate({
    "plausibility": {"danger_region": {"left": 100, "top": 120, "width": 120, "height": 60, **PX},
                     "warning_region": {"left": 70, "top": 110, "width": 180, "height": 70, **PX}},
    "stop_region": {"region": {"left": 70, "top": 110, "width": 180, "height": 70, **PX}},
})


def _has(img: np.ndarray, y: int, x0: int, x1: int, colour) -> bool:
    """Some pixel of row ``y`` between x0 and x1 has exactly ``colour``."""
    return bool((img[y, x0:x1] == np.array(colour, np.uint8)).all(axis=1).any())


def test_detections_regions_ghosts_and_verdicts_are_drawn_where_they_are():
    black = np.zeros((H, W, 3), np.uint8)
    frame = Frame(1_000_000_000, (Detection(Box(20, 20, 60, 100), "pedestrian", 0.9),), image=black)
    ghost = np.array([[150.0, 130.0, 180.0, 170.0]])
    results = [MonitorResult("contrast", True, Level.ERROR, (), {"statistic": 12.0}),
               MonitorResult("plausibility", True, Level.ERROR)]
    img = draw_overlay(frame, results, CFG, OverlayState(ghosts=ghost), stop=True)
    assert img.shape == (H, W, 3) and img.dtype == np.uint8
    assert not img.any(axis=2)[H // 2 - 5:H // 2 + 5, 250:300].any()  # untouched background stays black
    assert _has(img, 60, 18, 23, WATCHED)        # left edge of the detection box at x = 20
    assert _has(img, 150, 148, 153, GHOST)       # left edge of the ghost box at x = 150
    assert _has(img, 120, 95, 105, DANGER)       # top edge of the danger region at y = 120, from x = 100
    assert not frame.image.any()                 # the frame's own image is not drawn on
    panel = img[:40, :150].astype(int)  # verdict panel, top left: red ALARM text
    assert ((panel[..., 0] > 150) & (panel[..., 1] < 90)).sum() > 10
    right = img[:40, 200:].astype(int)  # the STOP banner, top right, red as well
    assert ((right[..., 0] > 150) & (right[..., 1] < 90)).sum() > 10


def test_without_an_image_draws_on_grey_of_the_given_size():
    frame = Frame(0, ())
    img = draw_overlay(frame, [], CFG, size=(W, H))
    assert img.shape == (H, W, 3) and img[H // 2, 5].tolist() == [64, 64, 64]


def test_render_writes_a_video_with_one_frame_per_bag_frame(tmp_path):
    from perception_safety.io.bag import CameraInfoSpec, write_frames
    from perception_safety.report.render import render_bag

    rng = np.random.default_rng(1)
    frames = [Frame(k * 50_000_000, (Detection(Box(20 + 3 * k, 20, 60 + 3 * k, 100), "pedestrian", 0.9),),
                    image=rng.integers(0, 256, (H, W, 3), dtype=np.uint8)) for k in range(12)]
    write_frames(tmp_path / "bag", frames, jpeg_quality=90, camera_info=CameraInfoSpec((W, H), (160, 160, 160, 90)))
    stats = render_bag(tmp_path / "bag", tmp_path / "v.mp4", CFG, frames_dir=tmp_path / "png", every=5)
    assert (stats.frames, stats.size, stats.without_image) == (12, (W, H), 0)
    assert abs(stats.fps - 20.0) < 1e-6
    cap = cv2.VideoCapture(str(tmp_path / "v.mp4"))
    n = 0
    while True:
        ok, bgr = cap.read()
        if not ok:
            break
        assert bgr.shape == (H, W, 3)
        n += 1
    assert n == 12
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["frame_00000.png", "frame_00005.png",
                                                                     "frame_00010.png"]


def test_ground_truth_is_matched_and_misses_and_false_detections_are_marked_with_a_legend():
    from perception_safety.core.types import GroundTruthObject
    from perception_safety.report.overlay import FALSE_DET, MATCHED, MISSED, TRUTH

    black = np.zeros((H, W, 3), np.uint8)
    found = GroundTruthObject(Box(20, 20, 60, 100), "pedestrian", 8.0)
    missed = GroundTruthObject(Box(230, 20, 270, 90), "pedestrian", 5.0)
    dets = (Detection(Box(21, 21, 60, 100), "pedestrian", 0.9), Detection(Box(150, 10, 170, 40), "pedestrian", 0.6))
    frame = Frame(0, dets, (found, missed), image=black)
    img = draw_overlay(frame, [], MonitorsConfig(plausibility={"enabled": False}, stop_region={"enabled": False}))
    assert _has(img, 60, 19, 23, MATCHED)     # the found object's detection: green
    assert _has(img, 60, 17, 20, TRUTH)       # its ground truth: white, just outside
    assert _has(img, 55, 228, 233, MISSED)    # the missed object: red box at x = 230
    assert _has(img, 30, 148, 153, FALSE_DET)  # the detection matching nothing: pink
    legend = img[H - 60:, W - 120:]
    assert (legend == np.array(MISSED, np.uint8)).all(axis=2).sum() > 10  # the legend's swatch of 'missed'


def test_tinting_a_region_equals_blending_a_tinted_copy_of_the_whole_image():
    from perception_safety.report.overlay import tint_region

    rng = np.random.default_rng(5)
    for _ in range(40):
        img = rng.integers(0, 256, (72, 96, 3), dtype=np.uint8)
        poly = rng.integers(-60, 160, (int(rng.integers(3, 7)), 2)).astype(np.int32)  # partly or wholly outside
        want = img.copy()
        tint = want.copy()  # the straightforward way: tint a copy of the whole image, blend it all
        cv2.fillPoly(tint, [poly], (255, 200, 0))
        cv2.addWeighted(tint, 0.18, want, 0.82, 0.0, dst=want)
        tint_region(img, poly, (255, 200, 0), 0.18)
        assert np.array_equal(img, want)


def test_drawing_only_a_window_gives_the_whole_pictures_pixels_there():
    from perception_safety.core.types import GroundTruthObject

    rng = np.random.default_rng(11)
    for trial in range(30):
        colour = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
        image = colour if trial % 3 else colour[..., 0].copy()  # grey images are drawn in colour as well
        boxes = [sorted(rng.uniform(-40, W + 40, 2)) + sorted(rng.uniform(-40, H + 40, 2)) for _ in range(6)]
        gts = tuple(GroundTruthObject(Box(b[0], b[2], b[1], b[3]), "pedestrian", float(rng.uniform(2, 60)))
                    for b in boxes[:3])
        dets = tuple(Detection(Box(b[0], b[2], b[1], b[3]), "pedestrian", 0.7) for b in boxes[3:])
        frame = Frame(trial, dets, gts, image=image)
        x0, y0 = int(rng.integers(0, W - 20)), int(rng.integers(0, H - 20))
        window = (x0, y0, int(rng.integers(1, W - x0 + 1)), int(rng.integers(1, H - y0 + 1)))
        results = [MonitorResult("contrast", True, Level.ERROR, (), {"statistic": 3.0})]
        full_size = (2 * W, 2 * H) if trial % 2 else None  # as from a coarse decode: boxes scaled down to the image
        kwargs = dict(stop=bool(trial % 2), legend=trial % 4 == 0, text_scale=float(rng.uniform(0.5, 2)),
                      full_size=full_size)
        whole = draw_overlay(frame, results, CFG, OverlayState(ghosts=np.array([boxes[0]])), **kwargs)
        cut = draw_overlay(frame, results, CFG, OverlayState(ghosts=np.array([boxes[0]])), window=window, **kwargs)
        x, y, w, h = window
        assert cut.shape == (h, w, 3) and cut.flags.c_contiguous
        assert np.array_equal(cut, whole[y:y + h, x:x + w])  # regions (tinted), boxes, labels, legend: bit for bit
        assert np.array_equal(frame.image, image)  # the frame's own image is not drawn on
