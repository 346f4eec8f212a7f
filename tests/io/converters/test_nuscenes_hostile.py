"""`convert nuscenes` on malformed tables and results: exit 2 naming the file, record and key (never a traceback),
and a warning when the results leave samples out; results of another split are an error, not empty detections."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main

from .nuscenes_fixture import build


def _first(key, value=...):
    def edit(rows):
        if value is ...:
            del rows[0][key]
        else:
            rows[0][key] = value
        return rows
    return edit


@pytest.mark.parametrize(("table", "edit", "message"), [
    ("sample_annotation", _first("token", [1]), "sample_annotation.json: record 0 ('token' [1]): 'token': expected "
                                                "a string"),
    ("sample_annotation", _first("num_lidar_pts", "many"), "'num_lidar_pts': expected a count"),
    ("sample_annotation", _first("num_radar_pts", None), "'num_radar_pts': expected a count"),
    ("sample_annotation", _first("translation"), "sample_annotation.json: sample_annotation ann-0-0-0: "
                                                 "'translation': expected 3 numbers"),
    ("sample", _first("timestamp", "x"), "sample.json: sample sample-0-0: 'timestamp': expected microseconds"),
    ("sample", _first("timestamp"), "'timestamp': expected microseconds"),
    ("sample", _first("scene_token", ["x"]), "sample.json: record 0 ('token' sample-0-0): 'scene_token'"),
    ("sample_data", _first("sample_token", ["x"]), "sample_data.json: record 0"),
    ("category", _first("name", ["x"]), "category.json: record 0 ('token' cat-0): 'name'"),
    ("ego_pose", _first("rotation", [0, 0, 0, 0]), "ego_pose.json: ego_pose ep-sample-0-0: 'rotation': zero"),
    ("sample", lambda rows: [], "sample.json: no sample"),
])
def test_malformed_table_exit_2_naming_file_record_and_key(tmp_path, capsys, table, edit, message):
    build(tmp_path / "t", n_scenes=1, samples_per_scene=2)
    path = tmp_path / "t" / f"{table}.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    assert main(["convert", "nuscenes", str(tmp_path / "t"), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_results_of_another_split_is_an_error(tmp_path, capsys):
    build(tmp_path / "t", n_scenes=1, samples_per_scene=2)
    res = tmp_path / "t" / "results.json"
    doc = json.loads(res.read_text())
    res.write_text(json.dumps({"meta": {}, "results": {"other-" + k: v for k, v in doc["results"].items()}}))
    assert main(["convert", "nuscenes", str(tmp_path / "t"), "--results", str(res), "--out",
                 str(tmp_path / "o.jsonl")]) == 2
    assert "none of its 2 sample token(s)" in capsys.readouterr().err


def test_results_missing_samples_warn(tmp_path, capsys):
    build(tmp_path / "t", n_scenes=1, samples_per_scene=3)
    res = tmp_path / "t" / "results.json"
    doc = json.loads(res.read_text())
    res.write_text(json.dumps({"meta": {}, "results": dict(list(doc["results"].items())[:1])}))
    assert main(["convert", "nuscenes", str(tmp_path / "t"), "--results", str(res), "--out",
                 str(tmp_path / "o.jsonl")]) == 0
    assert "warning: 2 of 3 samples have no entry in the results" in capsys.readouterr().out
