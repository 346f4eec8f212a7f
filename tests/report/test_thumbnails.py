"""Thumbnails of referenced frames: what the alt text says, and a small JPEG cut around the object."""

from __future__ import annotations

import cv2
import numpy as np

from perception_safety.core import Box, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.overlay import MISSED, TruthStyle
from perception_safety.report.thumbnails import alt_text, draw_reference, thumbnails


def test_alt_text_says_what_where_which_episode_and_when():
    ref = {"kind": "missed", "label": "ped", "distance_m": 12.34, "episode": "004", "t_s": 3.2}
    assert alt_text(ref) == "missed pedestrian at 12.3 m, episode 004, t = 3.20 s"
    assert alt_text({"kind": "false_stop", "label": "pedestrian", "episode": "e", "t_s": 1}).startswith("false stop")


def _frame() -> Frame:
    img = np.full((720, 1280, 3), 90, np.uint8)
    return Frame(0, (), (GroundTruthObject(Box(900, 300, 940, 400), "pedestrian", 9.0),), image=img)


def test_the_thumbnail_is_cut_around_the_object_and_marks_it_missed():
    frame = _frame()
    jpeg = draw_reference(frame, {"box": [900, 300, 940, 400]}, MonitorsConfig(), TruthStyle(), width=240)
    img = cv2.cvtColor(cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert img.shape[1] == 240 and img.shape[0] == 180  # 4:3 window
    red = (np.abs(img.astype(int) - np.array(MISSED)).sum(axis=2) < 90).sum()
    assert red > 200  # the missed object's red box (and label) fill a visible part of the small picture


def test_thumbnails_seek_each_bag_once_and_name_what_is_missing(tmp_path):
    write_frames(tmp_path / "bag", [_frame()], jpeg_quality=90)
    cfg = EvaluateConfig()
    refs = [{"bag": str(tmp_path / "bag"), "stamp_ns": 0, "box": [900, 300, 940, 400], "kind": "missed"},
            {"bag": str(tmp_path / "bag"), "stamp_ns": 99, "kind": "missed"},
            {"bag": str(tmp_path / "nope"), "stamp_ns": 0, "kind": "missed"}]
    got = thumbnails(refs, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=10)
    assert got[0].jpeg is not None and got[0].jpeg[:2] == b"\xff\xd8"
    assert got[1].jpeg is None and "not found" in got[1].missing
    assert got[2].jpeg is None and "nope" in got[2].missing


def test_a_reference_with_its_recording_window_is_sought_and_drawn_as_from_the_whole_bag(tmp_path):
    from perception_safety.io.bag import read_frames

    frames = [Frame(k * 50_000_000, (), (GroundTruthObject(Box(900 - 40 * k, 300, 940 - 40 * k, 400), "pedestrian",
                                                           9.0 + k),),
                    image=np.broadcast_to(np.linspace(40, 200, 1280, dtype=np.uint8)[None, :, None] // (1 + k % 3),
                                          (720, 1280, 3)).copy()) for k in range(6)]
    write_frames(tmp_path / "bag", frames, jpeg_quality=90)
    windows: dict[int, tuple[int, int]] = {}
    list(read_frames(tmp_path / "bag", windows=windows, with_images=False))
    cfg = EvaluateConfig()
    refs = [{"bag": str(tmp_path / "bag"), "stamp_ns": frames[k].stamp_ns, "kind": "missed",
             "box": list(frames[k].ground_truth[0].box.as_tuple())} for k in (1, 4, 4)]
    old = thumbnails(refs, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=10, width=[240, 160, 240])
    sought = [{**r, "log_ns": list(windows[r["stamp_ns"]])} for r in refs]
    new = thumbnails(sought, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=10, width=[240, 160, 240])
    assert [t.seeked for t in old] == [False] * 3 and [t.seeked for t in new] == [True] * 3
    assert all(t.jpeg is not None for t in new)
    assert [t.jpeg for t in new] == [t.jpeg for t in old]  # the same bytes: the same frame, image and drawing
    shapes = [cv2.imdecode(np.frombuffer(t.jpeg, np.uint8), cv2.IMREAD_COLOR).shape[1] for t in new]
    assert shapes == [240, 160, 240]


def test_a_near_object_is_drawn_from_a_coarse_decode_like_from_the_full_image(tmp_path):
    from perception_safety.io.bag import read_frames
    from perception_safety.report.thumbnails import read_referenced

    ramp = np.linspace(20, 220, 1280, dtype=np.uint8)
    image = np.dstack([np.broadcast_to(ramp, (720, 1280)), np.broadcast_to((ramp * 0.8 + 30).astype(np.uint8),
                       (720, 1280)), np.broadcast_to(ramp[::-1] // 2 + 60, (720, 1280))]).copy()
    near = GroundTruthObject(Box(500, 150, 700, 600), "pedestrian", 4.0)  # 450 px tall: a window of 720 x 960
    far = GroundTruthObject(Box(1000, 300, 1030, 360), "pedestrian", 30.0)
    write_frames(tmp_path / "bag", [Frame(0, (), (near, far), image=image)], jpeg_quality=92)
    windows: dict[int, tuple[int, int]] = {}
    list(read_frames(tmp_path / "bag", windows=windows, with_images=False))
    cfg = EvaluateConfig()
    refs = [{"bag": str(tmp_path / "bag"), "stamp_ns": 0, "kind": "missed", "box": list(near.box.as_tuple())}]
    sought = [{**refs[0], "log_ns": list(windows[0])}]
    full: dict = {}
    frames, _, _ = read_referenced(sought, cfg.bags.topics, 0, [160], True, full)
    assert full[(str(tmp_path / "bag"), 0)] == (1280, 720)
    assert frames[(str(tmp_path / "bag"), 0)].image.shape == (180, 320, 3)  # 960 / 160 = 6: decoded at 1/4
    unsought, _, _ = read_referenced(refs, cfg.bags.topics, 0, [160], True, {})  # an older partial: bag read whole
    assert unsought[(str(tmp_path / "bag"), 0)].image.shape == (180, 320, 3)  # decoded coarse as well
    whole, _, _ = read_referenced(refs, cfg.bags.topics, 0)  # no widths: the full image
    assert whole[(str(tmp_path / "bag"), 0)].image.shape == (720, 1280, 3)
    new = thumbnails(sought, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=5, width=160)[0]
    old = draw_reference(whole[(str(tmp_path / "bag"), 0)], refs[0], cfg.monitors, TruthStyle(), 160)
    assert thumbnails(refs, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=5, width=160)[0].jpeg == new.jpeg
    a = cv2.imdecode(np.frombuffer(new.jpeg, np.uint8), cv2.IMREAD_COLOR).astype(int)
    b = cv2.imdecode(np.frombuffer(old, np.uint8), cv2.IMREAD_COLOR).astype(int)
    assert a.shape == b.shape == (120, 160, 3)
    # stated tolerance: the picture within JPEG noise for most pixels (median 3 levels); labels, whose glyph widths
    # round differently at the smaller size, may move by a pixel or two (the mean over all pixels below 16 levels)
    diff = np.abs(a - b)
    assert np.median(diff) <= 3 and diff.mean() < 16
    red = (np.abs(a - np.array(MISSED)[::-1]).sum(axis=2) < 90).sum()
    assert red > 100  # the missed box and its label are there, as large as from the full image
    assert abs(red - (np.abs(b - np.array(MISSED)[::-1]).sum(axis=2) < 90).sum()) < 0.3 * red


def test_a_malformed_recording_window_falls_back_to_reading_the_bag(tmp_path):
    write_frames(tmp_path / "bag", [_frame()], jpeg_quality=90)
    cfg = EvaluateConfig()
    base = {"bag": str(tmp_path / "bag"), "stamp_ns": 0, "box": [900, 300, 940, 400], "kind": "missed"}
    bad = [{**base, "log_ns": w} for w in (["0", "0"], [5, 1], [0.5, 1], [0, 2**70], "0-1", [True, 1], None)]
    got = thumbnails(bad, cfg.bags.topics, cfg.monitors, TruthStyle(), limit=10)
    assert all(t.jpeg is not None and not t.seeked for t in got)  # pictures from the whole bag, no crash


def test_a_strip_thumbnail_is_the_frame_at_half_scale_cut_with_no_resampling(tmp_path):
    from perception_safety.io.bag import read_frames

    rng = np.random.default_rng(8)  # 4 x 4 px grey blocks: kept by the JPEGs, blurred by resampling or a shift
    image = np.repeat(np.kron(rng.integers(0, 256, (180, 320), dtype=np.uint8), np.ones((4, 4), np.uint8))[..., None],
                      3, axis=2)
    gt = GroundTruthObject(Box(600, 330, 620, 370), "pedestrian", 30.0)  # 40 px tall: the least window
    write_frames(tmp_path / "bag", [Frame(0, (), (gt,), image=image)], jpeg_quality=95)
    windows: dict[int, tuple[int, int]] = {}
    list(read_frames(tmp_path / "bag", windows=windows, with_images=False))
    cfg = EvaluateConfig()
    no_regions = MonitorsConfig(plausibility={"enabled": False}, stop_region={"enabled": False})
    ref = {"bag": str(tmp_path / "bag"), "stamp_ns": 0, "kind": "missed", "box": list(gt.box.as_tuple()),
           "log_ns": list(windows[0])}
    thumb = thumbnails([ref], cfg.bags.topics, no_regions, TruthStyle(), limit=5, width=160, min_h=240)[0]
    got = cv2.imdecode(np.frombuffer(thumb.jpeg, np.uint8), cv2.IMREAD_GRAYSCALE).astype(int)
    assert got.shape == (120, 160)
    # the window: 320 x 240 px centred on the box (x 450..770, y 230..470), i.e. x 225..385, y 115..235 at 1/2
    half = cv2.resize(image[..., 0], (640, 360), interpolation=cv2.INTER_AREA).astype(int)
    away = np.ones((120, 160), bool)
    away[40:90, 40:125] = False  # the box, its label and the distance below it
    diff = {(dy, dx): np.abs(got - half[115 + dy:235 + dy, 225 + dx:385 + dx])[away].mean()
            for dy in (-1, 0, 1) for dx in (-1, 0, 1)}
    # stated tolerance: the bag's JPEG (quality 95) and the thumbnail's (72) of 2 px noise blocks, mean 11 levels;
    # the window a pixel off (or the picture resampled) leaves ~50
    assert diff[(0, 0)] < 16 and min(v for k, v in diff.items() if k != (0, 0)) > 3 * diff[(0, 0)]
