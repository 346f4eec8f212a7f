"""rosbag2 round trips in both storages and the assembly of frames by stamp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perception_safety.core import Frame
from perception_safety.io.bag import BagReadReport, BagTopics, find_bags, read_bags, read_frames, write_frames


def assert_same_frame(a: Frame, b: Frame) -> None:
    """Field by field; boxes travel as centre+size, so coordinates agree to rounding (1e-9 px)."""
    assert a.stamp_ns == b.stamp_ns
    assert np.array_equal(a.image, b.image)
    assert len(a.detections) == len(b.detections) and len(a.ground_truth) == len(b.ground_truth)
    for x, y in zip(a.detections, b.detections, strict=True):
        np.testing.assert_allclose(x.box.as_tuple(), y.box.as_tuple(), atol=1e-9)
        assert (x.class_id, x.score) == (y.class_id, y.score)
    for x, y in zip(a.ground_truth, b.ground_truth, strict=True):
        np.testing.assert_allclose(x.box.as_tuple(), y.box.as_tuple(), atol=1e-9)
        assert (x.class_id, x.position, x.track_id) == (y.class_id, y.position, y.track_id)
        assert x.distance == pytest.approx(y.distance, abs=1e-12)
    assert (a.ego.x, a.ego.y, a.ego.speed) == (b.ego.x, b.ego.y, b.ego.speed)
    assert math.isclose(a.ego.yaw, b.ego.yaw, abs_tol=1e-12)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip_of_a_few_hundred_frames(make_frames, tmp_path, storage):
    frames = make_frames(300)
    assert write_frames(tmp_path / "bag", frames, storage=storage) == 300
    report = BagReadReport()
    back = list(read_frames(tmp_path / "bag", report=report))
    assert len(back) == 300 and report.frames == 300
    assert not report.skipped and not report.unmatched and not report.missing_topics
    for a, b in zip(frames, back, strict=True):
        assert_same_frame(a, b)


def test_mono_and_missing_images_and_no_ego(make_frames, tmp_path):
    frames = make_frames(4, image_shape=(6, 8))
    frames = [
        Frame(f.stamp_ns, f.detections, f.ground_truth, None, f.image if i % 2 else None) for i, f in enumerate(frames)
    ]
    write_frames(tmp_path / "bag", frames)
    back = list(read_frames(tmp_path / "bag"))
    assert [b.image is None for b in back] == [True, False, True, False]
    assert np.array_equal(back[1].image, frames[1].image) and back[1].image.ndim == 2
    assert all(b.ego is None for b in back)


def test_without_images_reads_no_image(make_frames, tmp_path):
    write_frames(tmp_path / "bag", make_frames(5))
    assert all(f.image is None for f in read_frames(tmp_path / "bag", with_images=False))


def test_nearest_stamp_assembly_with_tolerance(make_frames, tmp_path):
    """Detections 2 ms after the camera: joined within a 5 ms tolerance, unmatched at 0 tolerance."""
    frames = make_frames(10)
    write_frames(tmp_path / "cam", frames, topics=BagTopics(detections="", ground_truth="", ego=""))
    shifted = [Frame(f.stamp_ns + 2_000_000, f.detections, f.ground_truth, f.ego) for f in frames]
    # Put both recordings into one bag: write camera-only and detection-only bags, then merge by reading both.
    from rosbags.rosbag2 import Reader, Writer

    write_frames(tmp_path / "det", shifted, topics=BagTopics(image=""))
    with Writer(tmp_path / "merged", version=9) as w:
        for src in ("cam", "det"):
            with Reader(tmp_path / src) as r:
                for c in r.connections:
                    conn = w.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest)
                    for _, t, raw in r.messages(connections=[c]):
                        w.write(conn, t, raw)
    exact = BagReadReport()
    assert all(f.image is None for f in read_frames(tmp_path / "merged", report=exact))
    assert exact.unmatched[(str(tmp_path / "merged"), "/camera/image_raw")] == 10
    near = BagReadReport()
    joined = list(read_frames(tmp_path / "merged", tolerance_ns=5_000_000, report=near))
    assert all(np.array_equal(j.image, f.image) for j, f in zip(joined, frames, strict=True))
    assert not near.unmatched


def test_find_bags_searches_directories(make_frames, tmp_path):
    write_frames(tmp_path / "a" / "bag1", make_frames(2))
    write_frames(tmp_path / "b" / "bag2", make_frames(3), storage="sqlite3")
    bags = find_bags([tmp_path])
    assert [p.name for p in bags] == ["bag1", "bag2"]
    assert len(list(read_bags([tmp_path]))) == 5


def test_monitor_results_round_trip(make_frames, tmp_path):
    from perception_safety.io.bag import read_monitor_results
    from perception_safety.monitors.base import Level, MonitorResult

    frames = make_frames(5)
    results = [
        (
            MonitorResult(
                "contrast",
                i % 2 == 0,
                Level.WARN if i % 2 == 0 else Level.OK,
                ("low contrast",) if i % 2 == 0 else (),
                {"statistic": 1580.0 - 0.1 * i},
            ),
            MonitorResult("plausibility", False, Level.OK, (), {"tracks": float(i), "ratio": 1 / 3}),
        )
        for i in range(5)
    ]
    write_frames(tmp_path / "bag", frames, monitor_results=results)
    back = read_monitor_results(tmp_path / "bag")
    assert [s for s, _ in back] == [f.stamp_ns for f in frames]
    assert [r for _, r in back] == results  # values exact: floats travel as their repr
    assert len(list(read_frames(tmp_path / "bag"))) == 5  # the status topic does not disturb frame assembly
    # issue 27: the same results read in the frames' own pass over the file (no second read for verdicts)
    from perception_safety.io.bag import BagReadReport, StatusRecords

    records, report = StatusRecords(), BagReadReport()
    assert len(list(read_frames(tmp_path / "bag", with_images=False, report=report, statuses=records))) == 5
    assert records.items == back and records.missing == "" and not report.unmatched and not report.skipped
    write_frames(tmp_path / "plain", frames)
    none = StatusRecords()
    assert len(list(read_frames(tmp_path / "plain", statuses=none))) == 5
    assert none.items == [] and "/perception_safety/monitor_results not in the bag" in none.missing


def test_compressed_images_and_camera_info_round_trip(make_frames, tmp_path):
    """JPEG on <image>/compressed plus CameraInfo; read back as the decoded JPEG, found under the image name."""
    from rosbags.rosbag2 import Reader

    from perception_safety.io.bag import CameraInfoSpec
    from perception_safety.io.image_codec import jpeg_roundtrip

    frames = make_frames(6, image_shape=(24, 32, 3))
    payloads, seen = zip(*(jpeg_roundtrip(f.image, 80) for f in frames), strict=True)
    write_frames(tmp_path / "bag", frames, compressed=list(payloads),
                 camera_info=CameraInfoSpec((32, 24), (16.0, 16.0, 16.0, 12.0)))
    with Reader(tmp_path / "bag") as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
    assert types["/camera/image_raw/compressed"] == "sensor_msgs/msg/CompressedImage"
    assert types["/camera/camera_info"] == "sensor_msgs/msg/CameraInfo"
    assert "/camera/image_raw" not in types
    report = BagReadReport()
    back = list(read_frames(tmp_path / "bag", report=report))
    assert not report.skipped and len(back) == 6
    for f, s in zip(back, seen, strict=True):
        np.testing.assert_array_equal(f.image, s)


def test_writer_refuses_images_that_disagree_with_the_camera_info(make_frames, tmp_path):
    from perception_safety.io.bag import BagError, CameraInfoSpec

    frames = make_frames(2, image_shape=(24, 32, 3))
    with pytest.raises(BagError, match="32x24 disagrees with camera_info 64x48"):
        write_frames(tmp_path / "bag", frames, jpeg_quality=90, camera_info=CameraInfoSpec((64, 48), (1, 1, 1, 1)))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_candidates_topic_round_trip_and_optional(make_frames, tmp_path, storage):
    from dataclasses import replace

    from perception_safety.core import Box, Detection

    frames = make_frames(6)
    low = (Detection(Box(1.0, 2.0, 30.0, 40.0), "car", 0.12),)
    mixed = [replace(f, candidates=low if i % 2 else ()) if i >= 2 else f for i, f in enumerate(frames)]
    write_frames(tmp_path / "bag", mixed, storage=storage)
    report = BagReadReport()
    back = list(read_frames(tmp_path / "bag", with_images=False, report=report))
    assert [b.candidates is None for b in back] == [True, True, False, False, False, False]
    assert back[3].candidates[0].score == 0.12 and back[2].candidates == ()
    np.testing.assert_allclose(back[3].candidates[0].box.as_tuple(), low[0].box.as_tuple(), atol=1e-9)
    assert not report.missing_topics  # an old bag without the topic is not a missing topic: None = not recorded
    write_frames(tmp_path / "old", frames, storage=storage)
    assert all(b.candidates is None for b in read_frames(tmp_path / "old", with_images=False))
