"""``perception-safety bbsl check|eval|test`` (the issue's interface), run in-process."""

from __future__ import annotations

import json
from pathlib import Path

from perception_safety.cli import main
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.dataset import write_jsonl_frames

ROOT = Path(__file__).resolve().parents[2]
S1 = str(ROOT / "config" / "specs" / "s1_stopping_distance.bbsl")
S4 = str(ROOT / "config" / "specs" / "s4_four_cases.bbsl")
AS_PRINTED = str(Path(__file__).parent / "data" / "s1_as_printed.bbsl")
BINDS = [
    "--bind",
    "vehicle=subject",
    "--bind",
    "vehicleExists()=subject_exists",
    "--bind",
    "stoppingDistance=[275,375]",
]


def test_check_json(capsys) -> None:
    assert main(["bbsl", "check", S1, *BINDS, "--image-size", "1242,375", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cases"] == ["stop", "NOT stop"]
    assert (out["exhaustive"], out["exclusionary"], out["non_redundant"]) == (True, True, True)
    assert out["counterexamples"] == {}


def test_check_listing_as_printed_reports_counterexample(capsys) -> None:
    assert main(["bbsl", "check", AS_PRINTED, *BINDS, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["non_redundant"] is False
    assert out["counterexamples"]["non_redundant"]["unreachable"] == ["NOT stop"]
    assert main(["bbsl", "check", AS_PRINTED, *BINDS, "--strict"]) == 1
    assert "non-redundant  NO" in capsys.readouterr().out


def test_check_malformed_spec_exits_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.bbsl"
    bad.write_text("case stop\n  PROJ_y(vehicle()) <> [1, 2]\nendcase\n")
    assert main(["bbsl", "check", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:2:22: syntax error")
    assert "^" in err and "expected one of" in err


def test_check_unknown_exfunction_exits_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.bbsl"
    bad.write_text("case stop\n  PROJ_y(car()) < [1, 2]\nendcase\n")
    assert main(["bbsl", "check", str(bad)]) == 2
    assert "unknown exfunction 'car()'" in capsys.readouterr().err


def test_eval_box_json(capsys) -> None:
    args = ["bbsl", "eval", S4, "--bind", "stoppingDistance=250,375", "--box", "500,260,600,300", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == {
        "box": [500.0, 260.0, 600.0, 300.0],
        "precondition": True,
        "cases": ["x_ystop"],
    }
    assert main(["bbsl", "eval", S1, *BINDS, "--box", "0,0,10,100", "--box", "0,0,10,300", "--json"]) == 0
    assert [r["cases"] for r in json.loads(capsys.readouterr().out)] == [["NOT stop"], ["stop"]]


def test_bad_options_exit_2(capsys, tmp_path: Path) -> None:
    assert main(["bbsl", "eval", S1, "--box", "5,0,1,1"]) == 2
    assert "--box" in capsys.readouterr().err
    assert main(["bbsl", "eval", S1, "--bind", "stoppingDistance=[3,1]", "--box", "0,0,1,1"]) == 2
    assert "lower bound above upper bound" in capsys.readouterr().err
    assert main(["bbsl", "check", S1, "--image-size", "wide"]) == 2
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bbsl:\n  bindings:\n    stoppingDistance: [1, 2, 3]\n")
    assert main(["bbsl", "check", S1, "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and "bbsl.bindings" in err


def test_test_command_writes_reports(tmp_path: Path, capsys) -> None:
    frames = [
        Frame(
            0,
            detections=(Detection(Box(100, 305, 200, 365), "car"),),
            ground_truth=(GroundTruthObject(Box(100, 300, 200, 360), "car", 8.0),),
            frame_id="a",
        ),
        Frame(1, ground_truth=(GroundTruthObject(Box(700, 280, 900, 370), "car", 5.0),), frame_id="b"),
    ]
    data = tmp_path / "d.jsonl"
    write_jsonl_frames(data, frames)
    out = tmp_path / "out"
    assert main(["bbsl", "test", S1, str(data), "--config", str(ROOT / "config" / "bbsl.yaml"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "T/(T+F) = 1/(1+1) = 50.0%" in text
    summary = json.loads((out / "bbsl_test_summary.json").read_text())
    assert summary["table4"]["stop"]["IoU_0.6:F, BBSL:F"]["examples"][0]["frame"] == "b"
    assert (out / "bbsl_test_cases.csv").read_text().count("\n") == 3


def test_check_well_formed_but_unanalysable_spec(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "q.bbsl"
    spec.write_text("exfunction all():set<bb> endexfunction\ncase any\n exists b in all() : true\nendcase\n")
    assert main(["bbsl", "check", str(spec), "--bind", "all=frame_boxes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cases"] == ["any"] and out["exhaustive"] is None and "set<bb>" in out["note"]


def test_test_command_reads_bags_and_rejects_unknown_inputs(tmp_path: Path, capsys) -> None:
    from perception_safety.io.bag import write_frames

    frames = [
        Frame(
            1_000,
            detections=(Detection(Box(100, 100, 200, 200), "car"),),
            ground_truth=(GroundTruthObject(Box(100, 100, 200, 200), "car", 30.0),),
            frame_id="far",
        )
    ]
    bag = tmp_path / "rec"
    write_frames(bag, frames)
    out = tmp_path / "out"
    assert main(["bbsl", "test", S1, str(bag), "--out", str(out)]) == 0
    assert "T/(T+F) = 1/(1+0) = 100.0%" in capsys.readouterr().out
    assert main(["bbsl", "test", S1, str(tmp_path / "missing.jsonl"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_test_command_warns_when_boxes_leave_the_image(tmp_path: Path, capsys) -> None:
    """1280×720 boxes tested with the default 1242×375 image: the spec's regions would be misplaced."""
    frames = [
        Frame(i, ground_truth=(GroundTruthObject(Box(600, 400 + i, 700, 700 + i), "car", 8.0),)) for i in range(3)
    ]
    data = tmp_path / "d.jsonl"
    write_jsonl_frames(data, frames)
    assert main(["bbsl", "test", S1, str(data), *BINDS, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "3 of 3 boxes (100 %) reach beyond the image size 1242×375" in err and "y = 702 px" in err
    assert main(["bbsl", "test", S1, str(data), *BINDS, "--image-size", "1280,720", "--out", str(tmp_path / "b")]) == 0
    assert "warning" not in capsys.readouterr().err
