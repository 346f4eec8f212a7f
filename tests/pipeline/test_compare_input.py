"""Issue 25 items 7-8: `compare` refuses incomplete runs and damaged results.json with exit 2 naming file and key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perception_safety.cli import main

GOOD = {
    "format": "perception_safety.results/1",
    "run_id": "20260101T000000Z-0000abcd",
    "complete": True,
    "confusion": {"metrics": [{"bin": "pooled", "lo": 0, "hi": 100, "label": "ped", "ground_truth": 10,
                               "true_positives": 9, "predicted": 9, "recall": 0.9, "precision": 1.0}]},
    "requirements": {"items": [{"label": "ped recall", "status": "PASS", "value": 0.9}]},
}


def _run(tmp_path: Path, name: str, content: bytes | str | object) -> Path:
    d = tmp_path / name
    d.mkdir()
    data = content if isinstance(content, bytes) else (content if isinstance(content, str) else json.dumps(content))
    (d / "results.json").write_bytes(data if isinstance(data, bytes) else data.encode())
    return d


def _compare(tmp_path: Path, bad: Path, capsys) -> str:
    good = _run(tmp_path, "good", GOOD)
    assert main(["compare", str(good), str(bad), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not (tmp_path / "cmp" / "compare.json").exists()
    return err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([GOOD], r"results\.json: not an 'evaluate' results\.json \(a JSON list"),
        ({**GOOD, "confusion": None}, r"results\.json: confusion: expected an object, got null"),
        ({**GOOD, "confusion": {"metrics": "all"}}, r"confusion\.metrics: expected a list, got a string"),
        ({**GOOD, "confusion": {"metrics": [{**GOOD["confusion"]["metrics"][0], "recall": "0.9"}]}},
         r"results\.json: confusion: metric \"recall 'ped' pooled\": value is a string \('0\.9'\), expected a number"),
        ({**GOOD, "confusion": {"metrics": [{"label": "ped", "recall": 0.5}]}},
         r"results\.json: confusion: unexpected structure \(missing key 'bin'\)"),
        ({**GOOD, "requirements": {"items": [{"label": "x", "value": "high"}]}},
         r"results\.json: requirements\.items\[0\]\.value: expected a number or null"),
        ({**GOOD, "pcd": {"pedestrian": {"pcd": "far", "n": 3}}}, r"results\.json: pcd: unexpected structure"),
        (b'{"format": "perception_safety.results/1",\n "x": "\xff\xfe"}', r"results\.json:2: not UTF-8 text"),
        ("[" * 100_000 + "]" * 100_000, r"results\.json: JSON nested too deeply to read"),
        ({k: v for k, v in GOOD.items() if k != "complete"}, r"incomplete results of run 20260101T000000Z-0000abcd"),
        ({**GOOD, "complete": False, "status": "failed", "error": "bag exploded"},
         r"incomplete results of run .*\(failed: bag exploded\); refusing to use them"),
    ],
)
def test_compare_refuses_damaged_or_incomplete_results(tmp_path, capsys, content, expected):
    err = _compare(tmp_path, _run(tmp_path, "bad", content), capsys)
    assert f"{tmp_path / 'bad' / 'results.json'}" in err
    assert re.search(expected, err), err


def test_compare_writes_nothing_through_a_symlinked_output(tmp_path, capsys):
    a, b = _run(tmp_path, "a", GOOD), _run(tmp_path, "b", GOOD)
    out = tmp_path / "cmp"
    out.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    (out / "compare.json").symlink_to(victim)
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 2
    assert "compare.json: is a symbolic link" in capsys.readouterr().err and victim.read_text() == "keep"
