"""``perception-safety returns``: tables from episode logs and from binary labels; clear errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.evaluation.returns import ReturnsConfig
from perception_safety.io.config import load_model
from perception_safety.io.episode_log import EpisodeLogWriter, EpisodeStep

REPO = Path(__file__).resolve().parents[2]


def _rollout(stop_from: int | None, horizon: int, collide: int | None = None) -> list[EpisodeStep]:
    out = []
    for t in range(horizon):
        running = stop_from is None or t < stop_from
        out.append(EpisodeStep(t, running=running, collision=t == collide))
        if not running:
            break
    return out


def test_returns_from_episode_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.jsonl"
    with EpisodeLogWriter(log) as w:
        # one avoided collision over T = 5: f hits at t=3; the monitor stops the car at t=2
        w.write_episode("s", "perception", _rollout(None, 5, collide=3))
        w.write_episode("s", "monitored", _rollout(2, 5))
        w.write_episode("s", "ground_truth", _rollout(3, 5))
    with log.open("a") as fh:
        fh.write('{"type":"begin","episode":"t')  # a torn tail from a crashed writer
    out = tmp_path / "out"
    assert main(["returns", str(log), "--out", str(out), "--config", str(REPO / "config" / "monitors.yaml")]) == 0
    err = capsys.readouterr().err
    assert "torn last line" in err
    rep = json.loads((out / "returns.json").read_text())
    # frames t = 0..3: S_f = -1 for t = 0..2; M_fm = running[t+1] = 1, 0, 0, 0 -> AC = 3/4
    assert rep["E2"]["frames"]["SG"] == pytest.approx(3 / 4)
    assert rep["E2"]["frames"]["AC"] == pytest.approx(3 / 4)
    assert rep["E2"]["episodes"]["SG"] == pytest.approx(1.0)
    rows = list(csv.DictReader((out / "returns_episodes.csv").open()))
    assert rows[0]["episode"] == "s" and rows[0]["collided_f"] == "1" and rows[0]["running_fm"] == "1"


def test_returns_from_binary_labels(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("tau,alarm\n1,1\n1,0\n0,1\n0,0\n0,0\ntrue,false\n")
    out = tmp_path / "out"
    assert main(["returns", "--binary", str(labels), "--out", str(out)]) == 0
    rep = json.loads((out / "returns.json").read_text())["binary"]
    assert rep["counts"] == {"TP": 1, "FP": 1, "FN": 2, "TN": 2}
    assert rep["samples"]["SG"] == pytest.approx(1 / 6) and rep["samples"]["RH"] == pytest.approx(2 / 6)


def test_bad_inputs_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("tau,alarm\n1,maybe\n")
    assert main(["returns", "--binary", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "bad.csv:2: column 'alarm'" in capsys.readouterr().err
    assert main(["returns", "--out", str(tmp_path / "o")]) == 2
    assert "exactly one" in capsys.readouterr().err
    log = tmp_path / "l.jsonl"
    log.write_text('{"type":"begin","episode":"a","rollout":"perception","meta":{}}\n{"type":"step"\n{"x":1}\n')
    assert main(["returns", str(log), "--out", str(tmp_path / "o")]) == 2
    assert "l.jsonl:2: not a JSON record" in capsys.readouterr().err


def test_shipped_returns_section_is_the_default() -> None:
    assert load_model(REPO / "config" / "monitors.yaml", ReturnsConfig, section="returns") == ReturnsConfig()


def _frame_steps(n: int, alarm_at: int | None, collide: int | None, label: str = "pedestrian") -> list[EpisodeStep]:
    from perception_safety.core import Box, Frame, GroundTruthObject

    gt = (GroundTruthObject(Box(0, 0, 10, 20), label, 10.0),)  # never detected: every frame is an error
    return [
        EpisodeStep(
            t,
            running=True,
            collision=t == collide,
            alarm=alarm_at is not None and t >= alarm_at,
            frame=Frame(t, (), gt),
        )
        for t in range(n)
    ]


def _runner_like_log(path: Path) -> None:
    """f collides at t=4, the monitor alarms from t=3 but f+m collides too; settings recorded as the runner does."""
    meta = {"perturbation": "smoke", "level": 3, "returns_config": {"e1": {"classes": ["pedestrian"]}}}
    with EpisodeLogWriter(path) as w:
        w.write_episode("e", "perception", _frame_steps(6, 3, 4), meta)
        w.write_episode("e", "monitored", _frame_steps(6, 3, 4), meta)
        w.write_episode("e", "ground_truth", _frame_steps(6, None, None), meta)


def test_returns_uses_the_runners_settings_and_explains_zeros(tmp_path: Path, capsys) -> None:
    log = tmp_path / "run.jsonl"
    _runner_like_log(log)
    assert main(["returns", str(log), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    rep = json.loads((tmp_path / "a" / "returns.json").read_text())
    assert rep["config"]["e1"]["classes"] == ["pedestrian"] and "recorded in the logs" in err
    assert rep["E2"]["frames"]["SG"] == 0
    assert "E2 SG = 0" in err and "perturbation smoke level 3" in err and "first at t = 3" in err
    # a class that is not in the logs: SG = RH = 0 with the reason, and the settings differ from the run's
    assert main(["returns", str(log), "--out", str(tmp_path / "b"), "--classes", "person"]) == 0
    err = capsys.readouterr().err
    rep = json.loads((tmp_path / "b" / "returns.json").read_text())
    assert rep["E1"]["frames"]["SG"] == rep["E1"]["frames"]["RH"] == 0
    assert "'person' occur in the logged frames (labels seen: pedestrian" in err
    assert "settings differ from the ones the episode runner used (e1.classes" in err
