"""``perception-safety verify --controller`` with each kind of controller on the seed paper's matrices."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from perception_safety.cli import main

REFERENCE = (Path(__file__).resolve().parents[3] / "reference"
             / "dist_confusion_matrices_nuscenes_yolov3.json")
SHIPPED = Path(__file__).resolve().parents[3] / "config" / "controllers" / "paper_modes.csv"


def _phi(out: Path) -> dict[tuple[int, int], float]:
    with (out / "verification.csv").open() as fh:
        return {(int(r["max_speed"]), int(r["initial_speed"])): float(r["probability"]) for r in csv.DictReader(fh)
                if r["variant"] == "prop_by_distance" and r["true_env"] == "ped" and r["spec"] == "phi"}


def _verify(tmp_path: Path, controller: str) -> dict[tuple[int, int], float]:
    out = tmp_path / controller.replace(":", "_").replace("/", "_")
    assert main(["verify", "--matrices", str(REFERENCE), "--controller", controller, "--max-speed", "2",
                 "--max-speed", "4", "--spec", "phi", "--no-plot", "--out", str(out)]) == 0
    return _phi(out)


def test_three_controller_kinds_and_paper_modes_separate_by_v(tmp_path, capsys):
    if not REFERENCE.exists():
        pytest.fail(f"reference data {REFERENCE} not found")
    rule = _verify(tmp_path, "braking_rule")
    modes = _verify(tmp_path, "paper_modes")
    table = _verify(tmp_path, f"policy:{SHIPPED}")
    code = _verify(tmp_path, "python:perception_safety.verification.controllers.builtin:paper_modes")
    assert "controller: policy table" in capsys.readouterr().out
    assert table == modes and code == modes  # the shipped table and the callable are the paper's modes
    # braking rule: the curves coincide (value independent of V); paper modes: they separate
    assert rule[(2, 1)] == pytest.approx(rule[(4, 1)], abs=1e-12)
    assert abs(modes[(2, 1)] - modes[(4, 1)]) > 1e-3
    assert rule[(2, 1)] == pytest.approx(22 / 85, abs=1e-12)  # docs/verification.md reference value


def test_write_controller_and_bad_controller(tmp_path, capsys):
    out = tmp_path / "modes.csv"
    assert main(["verify", "--controller", "paper_modes", "--max-speed", "3", "--write-controller", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "max_speed,x,v,kind,next_x,next_v" and len(rows) == 1 + 3 * 10 * 4  # N = 10, V = 3
    assert main(["verify", "--matrices", str(REFERENCE), "--controller", "fastest", "--out", str(tmp_path)]) == 2
    assert "unknown controller 'fastest'; built-in: ['braking_rule', 'paper_modes']" in capsys.readouterr().err
    assert main(["verify", "--matrices", str(REFERENCE), "--controller", "python:nocolon", "--out",
                 str(tmp_path)]) == 2
    assert "python controller 'nocolon': expected 'module:function'" in capsys.readouterr().err
