"""Issue 25 item 8: deeply nested or binary JSON inputs are errors naming the file (exit 2), never tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.io.dataset import DatasetError, read_jsonl_frames
from perception_safety.io.episode_log import EpisodeLogError, read_episode_log

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (DEEP, "gt.json: JSON nested too deeply to read (COCO JSON)"),
        (b'{"images": [\n{"id": "\xff"}]}', "gt.json:2: not UTF-8 text"),
        ('{"images": [}', "gt.json:1:13: invalid JSON (COCO JSON)"),
    ],
)
def test_convert_coco_bad_json_exit_2_naming_the_file(tmp_path: Path, capsys, content, expected):
    gt = tmp_path / "gt.json"
    gt.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["convert", "coco", str(gt), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_dataset_line_too_deep_or_binary_names_file_and_line(tmp_path: Path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"frame": "a", "detections": []}\n' + DEEP.encode() + b"\n")
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: JSON nested too deeply"):
        list(read_jsonl_frames(path))
    path.write_bytes(b'{"frame": "a", "detections": []}\n{"frame": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: not UTF-8 text"):
        list(read_jsonl_frames(path))


def test_confusion_matrix_file_too_deep_is_named(tmp_path: Path, capsys):
    from perception_safety.evaluation.confusion.io import ConfusionFileError, load_matrices

    path = tmp_path / "m.json"
    path.write_text(DEEP)
    with pytest.raises(ConfusionFileError, match=r"m\.json: JSON nested too deeply"):
        load_matrices(path)


def test_episode_log_deep_record_names_the_file(tmp_path: Path):
    path = tmp_path / "e.jsonl"
    path.write_text(DEEP + "\n" + DEEP + "\n")
    with pytest.raises(EpisodeLogError, match=r"e\.jsonl:1: not a JSON record"):
        read_episode_log(path)
