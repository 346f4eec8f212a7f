"""Seeking a frame by its recording window: the window `read_frames` notes, and the frame read back through it
equal to the frame read from the whole bag (bags whose log times are another clock than the header stamps)."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.rosbag2 import Writer

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import BagTopics, read_frames
from perception_safety.io.bag.layout import TOPIC_TYPES, storage_plugin
from perception_safety.io.frame_seek import frames_at, frames_in_windows
from perception_safety.io.image_codec import encode_jpeg
from perception_safety.io.typestore import ros2_typestore

WALL = 1_700_000_000_000_000_000
"""Log times are the recorder's wall clock; header stamps are simulation time (another clock)."""
LAGS = {"ground_truth": 2_000_000, "ego": 5_000_000, "detections": 40_000_000}
"""Log time after the frame's wall time, per topic (the detector publishes last)."""


def _frames(n: int = 12) -> list[Frame]:
    out = []
    ramp = np.linspace(0, 60, 64, dtype=np.float64)[None, :, None]
    for k in range(n):
        img = np.broadcast_to(15 * k + ramp, (48, 64, 3)).astype(np.uint8)  # each frame its own level
        gt = (GroundTruthObject(Box(k, 2, k + 9, 30), "pedestrian", 5.0 + k),)
        det = (Detection(Box(k + 1, 3, k + 10, 31), "pedestrian", 0.5 + k / 100),)
        out.append(Frame(3_000_000_000 + k * 100_000_000, det, gt, EgoState(speed=float(k)), img))
    return out


def _record(path, frames, storage="mcap", image_lag=None, corrupt=(), no_image=()):
    """Each frame's messages at wall time ``WALL + 10 ms * k`` plus their topic's lag; the image ``image_lag(k)``
    (default 1 ms) after it, a corrupt JPEG for the frames in ``corrupt``, none for those in ``no_image``.
    Returns each frame's expected window: first and last log time of its non-image messages."""
    store = ros2_typestore()
    topics = BagTopics()
    windows = {}
    with Writer(path, version=9, storage_plugin=storage_plugin(storage)) as w:
        conns = {r: w.add_connection(getattr(topics, r), TOPIC_TYPES[r], typestore=store) for r in LAGS}
        img_conn = w.add_connection(topics.image + "/compressed", bm.COMPRESSED_IMAGE_TYPE, typestore=store)
        for k, f in enumerate(frames):
            base = WALL + k * 10_000_000
            msgs = {"ground_truth": bm.ground_truth_to_msg(f.ground_truth, f.stamp_ns),
                    "ego": bm.ego_to_msg(f.ego, f.stamp_ns),
                    "detections": bm.detections_to_msg(f.detections, f.stamp_ns)}
            lag = image_lag(k) if image_lag else 1_000_000
            if k not in no_image:
                payload = b"\xff\xd8 not a jpeg" if k in corrupt else encode_jpeg(f.image, 95)
                w.write(img_conn, base + lag, store.serialize_cdr(bm.compressed_image_to_msg(payload, f.stamp_ns),
                                                                 bm.COMPRESSED_IMAGE_TYPE))
            for role, msg in msgs.items():
                w.write(conns[role], base + LAGS[role], store.serialize_cdr(msg, TOPIC_TYPES[role]))
            windows[f.stamp_ns] = (base + min(LAGS.values()), base + max(LAGS.values()))
    return windows


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_read_frames_notes_each_frames_recording_window(tmp_path, storage):
    frames = _frames()
    expected = _record(tmp_path / "bag", frames, storage)
    got: dict[int, tuple[int, int]] = {}
    read = list(read_frames(tmp_path / "bag", BagTopics(), 0, False, windows=got))
    assert [f.stamp_ns for f in read] == [f.stamp_ns for f in frames]
    assert got == expected


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_the_frame_sought_by_its_window_is_the_frame_read_from_the_whole_bag(tmp_path, storage):
    frames = _frames()
    # images logged inside the window, 30 ms before it (the camera before everything else), 0.5 s after it
    # (searched in the widened window), 3 s before it (found on the whole topic); one corrupt, one missing
    lags = {2: -30_000_000, 5: 500_000_000, 7: -3_000_000_000}
    windows = _record(tmp_path / "bag", frames, storage, lambda k: lags.get(k, 3_000_000), corrupt={9},
                      no_image={10})
    wanted = [f.stamp_ns for f in frames]
    old = frames_at(tmp_path / "bag", wanted, BagTopics())
    new = frames_in_windows(tmp_path / "bag", {s: windows[s] for s in wanted}, BagTopics())
    assert sorted(new) == sorted(old) == wanted
    for k, s in enumerate(wanted):
        a, b = old[s], new[s]
        assert (b.detections, b.ground_truth, b.ego, b.stamp_ns) == (a.detections, a.ground_truth, a.ego, a.stamp_ns)
        assert b.detections == frames[k].detections  # the frame's own messages, not a neighbour's
        assert [(g.box, g.distance) for g in b.ground_truth] == [(g.box, g.distance) for g in frames[k].ground_truth]
        if k in (9, 10):
            assert a.image is None and b.image is None  # corrupt / missing: no picture, as before
        else:
            assert b.image is not None and np.array_equal(a.image, b.image)
            assert np.abs(b.image.astype(int) - frames[k].image).mean() < 3  # its own image (JPEG-close)


@pytest.mark.parametrize("picked", [(0, 5, 10), (1, 2, 9), (11, 3)])
def test_frames_sought_together_are_each_the_frame_read_from_the_whole_bag(tmp_path, picked):
    from itertools import pairwise

    from perception_safety.io.frame_seek import _spans

    frames = _frames()
    windows = _record(tmp_path / "bag", frames)  # windows 38 ms long, 10 ms apart: neighbours overlap
    wanted = [frames[k].stamp_ns for k in picked]
    spans = _spans(windows[s] for s in wanted)
    assert all(a[1] < b[0] for a, b in pairwise(spans))  # disjoint, in order
    assert all(any(lo <= windows[s][0] and windows[s][1] < hi for lo, hi in spans) for s in wanted)
    whole = frames_at(tmp_path / "bag", wanted, BagTopics())
    together = frames_in_windows(tmp_path / "bag", {s: windows[s] for s in wanted}, BagTopics())
    assert list(together) == sorted(wanted)
    for k, s in zip(picked, wanted, strict=True):
        a, b = whole[s], together[s]
        assert (b.detections, b.ground_truth, b.ego, b.frame_id) == (a.detections, a.ground_truth, a.ego, a.frame_id)
        assert b.detections == frames[k].detections and np.array_equal(a.image, b.image)


def test_windows_become_disjoint_spans_in_order():
    from perception_safety.io.frame_seek import _spans

    assert _spans([(50, 60), (10, 20), (15, 30), (31, 40), (70, 70)]) == [(10, 41), (50, 61), (70, 71)]
    assert _spans([]) == []


def test_a_window_outside_the_recording_gives_no_frame(tmp_path):
    frames = _frames(4)
    _record(tmp_path / "bag", frames)
    s = frames[1].stamp_ns
    assert frames_in_windows(tmp_path / "bag", {s: (WALL + 10**12, WALL + 10**12)}, BagTopics()) == {}


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_time_window_gives_what_rosbags_gives_for_it(tmp_path, storage):
    from rosbags.rosbag2 import Reader

    from perception_safety.io.bag.storage import RosbagsBag, open_bag

    _record(tmp_path / "bag", _frames(), storage)
    windows = [(None, None), (WALL + 12_000_000, WALL + 45_000_000), (WALL + 40_000_000, WALL + 40_000_001),
               (WALL + 10**12, None), (None, WALL)]
    with Reader(tmp_path / "bag") as ref:
        want = {w: [(c.topic, t, bytes(raw)) for c, t, raw in ref.messages(ref.connections, *w)] for w in windows}
    for bag in (open_bag(tmp_path / "bag"), RosbagsBag(tmp_path / "bag", "")):
        with bag:
            assert bag.note == "" or isinstance(bag, RosbagsBag)
            for w in windows:
                got = [(c.topic, t, bytes(raw)) for c, t, raw in bag.messages(bag.connections, *w)]
                assert got == want[w], w
    assert len(want[windows[2]]) == 1 and want[windows[3]] == want[windows[4]] == []
