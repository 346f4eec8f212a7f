"""PCD samples from Frames (IoU x confidence per target, 0 when missed) and from CSV."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.pcd.samples import (
    SampleError,
    merge_samples,
    read_samples_csv,
    samples_from_frames,
    write_samples_csv,
)


def frame(stamp: int, dets, gts) -> Frame:
    return Frame(stamp_ns=stamp, detections=tuple(dets), ground_truth=tuple(gts))


def gt(box, distance, cls="car", track="1") -> GroundTruthObject:
    return GroundTruthObject(Box(*box), cls, distance, track_id=track)


@pytest.fixture
def frames() -> list[Frame]:
    return [
        # exact match, score 0.8 -> y = 0.8; a pedestrian target is missed
        frame(
            0,
            [Detection(Box(0, 0, 10, 10), "car", 0.8)],
            [gt((0, 0, 10, 10), 30.0), gt((50, 50, 60, 60), 12.0, "person", "9")],
        ),
        # half-overlapping detection: IoU = 50 / 150 = 1/3, score 0.6 -> y = 0.2
        frame(1, [Detection(Box(5, 0, 15, 10), "car", 0.6)], [gt((0, 0, 10, 10), 20.0)]),
        # no detection -> y = 0
        frame(2, [], [gt((0, 0, 10, 10), 45.0)]),
        # two detections; the better overlap is the match (IoU 0.81 x 0.5 = 0.405), not the higher score
        frame(
            3,
            [Detection(Box(1, 1, 10, 10), "car", 0.5), Detection(Box(8, 8, 20, 20), "car", 0.99)],
            [gt((0, 0, 10, 10), 5.0)],
        ),
    ]


def test_samples_from_frames_products_and_misses(frames):
    s = samples_from_frames(frames)
    assert s.x.tolist() == [5.0, 12.0, 20.0, 30.0, 45.0]  # sorted by distance
    np.testing.assert_allclose(s.y, [0.81 * 0.5, 0.0, 0.2, 0.8, 0.0])
    assert s.missed.tolist() == [False, True, False, False, True]


def test_class_and_track_filters(frames):
    assert samples_from_frames(frames, class_id="person").x.tolist() == [12.0]
    assert samples_from_frames(frames, track_id="1").n == 4
    assert samples_from_frames(frames, class_id="truck").n == 0


def test_iou_threshold_turns_weak_overlap_into_a_miss(frames):
    s = samples_from_frames(frames, iou_threshold=0.5)
    assert s.y[s.x == 20.0].tolist() == [0.0]
    assert s.missed[s.x == 20.0].tolist() == [True]


def test_csv_roundtrip_and_stable_sort(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("distance_m,y,extra\n3,0.5,a\n1,0.7,b\n3,0.4,c\n\n2,0,d\n")
    s = read_samples_csv(path)
    assert s.x.tolist() == [1.0, 2.0, 3.0, 3.0]
    assert s.y.tolist() == [0.7, 0.0, 0.5, 0.4]  # equal distances keep file order
    out = tmp_path / "o.csv"
    write_samples_csv(out, s)
    back = read_samples_csv(out)
    assert back.x.tolist() == s.x.tolist() and back.y.tolist() == s.y.tolist()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty file"),
        ("dist,y\n1,2\n", r":1: missing column\(s\) distance_m"),
        ("distance_m,y\n1,0.5\n2,abc\n", r":3: column y: not a number: 'abc'"),
        ("distance_m,y\n1,nan\n", r":2: column y: not finite"),
        ("distance_m,y\n-4,0.5\n", r":2: column distance_m: negative distance"),
        ("distance_m,y\n1\n", r":2: expected at least 2 columns"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path, text, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(SampleError, match=match) as info:
        read_samples_csv(path)
    assert str(path) in str(info.value)


def test_missing_csv_file(tmp_path):
    with pytest.raises(SampleError, match="cannot read"):
        read_samples_csv(tmp_path / "nope.csv")


def test_merge_samples_is_the_same_as_one_pass(frames):
    whole = samples_from_frames(frames)
    merged = merge_samples([samples_from_frames(frames[:2]), samples_from_frames(frames[2:])])
    np.testing.assert_array_equal(merged.x, whole.x)
    np.testing.assert_array_equal(merged.y, whole.y)
    np.testing.assert_array_equal(merged.missed, whole.missed)
    assert merge_samples([]).n == 0


def test_raw_input_takes_the_top_score_of_the_target_with_candidates() -> None:
    target = gt((0, 0, 10, 10), 30.0, track="7")
    other = gt((100, 100, 110, 110), 35.0, track="8")
    f_raw = Frame(
        0,
        (Detection(Box(0, 0, 10, 10), "car", 0.6),),
        (target, other),
        candidates=(
            Detection(Box(1, 0, 10, 10), "car", 0.2),  # IoU 0.9, lower score: not the top box
            Detection(Box(100, 100, 110, 110), "car", 0.1),  # the other target's only box (below threshold)
        ),
    )
    s = samples_from_frames([f_raw], source="a.jsonl")
    assert s.input == "raw"
    np.testing.assert_allclose(s.y, [0.6, 0.1])  # the thresholded input would give 0.6 and 0
    assert list(s.group) == ["a.jsonl|7", "a.jsonl|8"]
    thr = samples_from_frames([f_raw], input="thresholded")
    np.testing.assert_allclose(thr.y, [0.6, 0.0])
    assert thr.input == "thresholded"
    f_old = Frame(1, (), (target,))  # candidates not recorded
    assert samples_from_frames([f_raw, f_old]).input == "mixed"
    with pytest.raises(SampleError, match="no sub-threshold candidates were recorded"):
        samples_from_frames([f_old], input="raw")
    ep = samples_from_frames([f_raw], source="bag1", unit="episode")
    assert list(ep.group) == ["bag1", "bag1"]


def test_csv_group_column_round_trips(tmp_path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("distance_m,y,group\n5,0.5,a\n1,0.7,b\n")
    s = read_samples_csv(path)
    assert list(s.group) == ["b", "a"] and s.input == "csv"
    write_samples_csv(tmp_path / "o.csv", s)
    again = read_samples_csv(tmp_path / "o.csv")
    assert list(again.group) == ["b", "a"]
    path.write_text("distance_m,y,group\n5,0.5,\n")
    with pytest.raises(SampleError, match=r"s\.csv:2: column group"):
        read_samples_csv(path)
