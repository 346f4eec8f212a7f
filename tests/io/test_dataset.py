"""The JSON Lines dataset: round trip, and malformed lines named by file:line."""

from __future__ import annotations

import pytest

from perception_safety.io.dataset import DatasetError, DatasetReadReport, read_jsonl_frames, write_jsonl_frames


def test_round_trip(make_frames, tmp_path):
    frames = [
        f.__class__(f.stamp_ns, f.detections, f.ground_truth, None, None, f"f{i}")
        for i, f in enumerate(make_frames(20))
    ]
    write_jsonl_frames(tmp_path / "d.jsonl", frames)
    assert list(read_jsonl_frames(tmp_path / "d.jsonl")) == frames


def test_distance_from_position_and_defaults(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(
        '{"frame": "a", "detections": [{"box": [0,0,1,1], "class": "car"}],'
        ' "ground_truth": [{"box": [0,0,2,2], "class": "ped", "position": [3,4,0]}]}\n\n'
    )
    (f,) = read_jsonl_frames(p)
    assert f.frame_id == "a" and f.detections[0].score == 1.0 and f.ground_truth[0].distance == 5.0


@pytest.mark.parametrize(
    "line, expected",
    [
        ('{"detections": [{"box": [0, 0, 1], "class": "car"}]}', r"detections\[0\]: box: expected \[x_min"),
        ('{"detections": [{"box": [5, 0, 1, 1], "class": "car"}]}', r"detections\[0\]: box: inverted"),
        ('{"ground_truth": [{"box": [0, 0, 1, 1], "class": "car"}]}', r"ground_truth\[0\]: needs 'distance'"),
        ('{"detections": [{"box": [0, 0, 1, NaN], "class": "car"}]}', "non-finite"),
        ('{"detections": [{"class": "car"}]}', "missing key 'box'"),
        ("{not json", "Expecting"),
        ('{"ground_truth": [{"box": [0, 0, 1, 1], "class": "car", "distance": "x"}]}', r"distance: expected a number"),
        ('{"detections": [{"box": [0, 0, 1, 1], "class": "car", "score": true}]}', r"score: expected a number"),
        ('{"detections": [{"box": [0, 0, 1, 1], "class": null}]}', r"class: expected a string"),
        (
            '{"ground_truth": [{"box": [0, 0, 1, 1], "class": "p", "position": [1, 2]}]}',
            r"position: expected \[x, y, z\]",
        ),
        ('{"stamp_ns": true}', "stamp_ns: expected an integer"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, line, expected):
    p = tmp_path / "d.jsonl"
    p.write_text('{"frame": "ok"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=rf"{p}:2: .*{expected}"):
        list(read_jsonl_frames(p))
    report = DatasetReadReport()
    assert len(list(read_jsonl_frames(p, skip_bad=True, report=report))) == 1
    assert list(report.skipped) == [(str(p), 2)] and report.frames == 1


def test_candidates_round_trip_and_absence_means_not_recorded() -> None:
    from perception_safety.core.types import Box, Detection, Frame
    from perception_safety.io.dataset import frame_from_record, frame_to_record

    f = Frame(3, (Detection(Box(0, 0, 4, 4), "car", 0.9),), candidates=(Detection(Box(1, 1, 4, 4), "car", 0.1),))
    rec = frame_to_record(f)
    assert rec["candidates"] == [{"box": [1.0, 1.0, 4.0, 4.0], "class": "car", "score": 0.1}]
    assert frame_from_record(rec).candidates == f.candidates
    plain = frame_to_record(Frame(3))
    assert "candidates" not in plain and frame_from_record(plain).candidates is None
    assert frame_from_record({**plain, "candidates": []}).candidates == ()
    import pytest

    from perception_safety.core.types import InvalidValueError

    with pytest.raises(InvalidValueError, match=r"candidates\[0\]"):
        frame_from_record({**plain, "candidates": [{"class": "car"}]})
