"""`perception-safety --help` and `perception-safety CMD --help` load no heavy library (issue 27 target 1).

A user pays the command's start-up imports on every run; the parser of every command is built from argparse
declarations only, and each command imports what it computes with when it runs. Checked in a fresh interpreter
(``sys.modules`` of this test process already holds everything the other tests imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("numpy", "scipy", "pydantic", "yaml", "rich", "lark", "cv2", "matplotlib", "stormpy", "rosbags", "rclpy")
"""Top-level packages a parser needs none of (numpy alone costs ~0.1 CPU s, scipy.stats ~0.3 s)."""


def _loaded_after(code: str) -> set[str]:
    """Top-level packages loaded by ``code`` in a fresh interpreter that imports this checkout."""
    script = f"import sys\n{code}\nimport json; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", script]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_building_every_parser_loads_no_heavy_library():
    loaded = _loaded_after("from perception_safety.cli import build_parser\nbuild_parser()")
    assert "perception_safety" in loaded  # the probe sees the package's imports
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"], ["bbsl", "check", "--help"]])
def test_help_loads_no_heavy_library(argv):
    code = (
        "from perception_safety.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    loaded = _loaded_after(code)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_the_probe_sees_a_heavy_import():
    """The check above could fail: a command that imports numpy at start-up shows up in the probe."""
    loaded = _loaded_after("from perception_safety.cli import build_parser\nbuild_parser()\nimport numpy")
    assert "numpy" in loaded


def test_a_command_in_its_own_process_writes_everything_and_exits_cleanly(tmp_path):
    """The process ends through the CLI's exit path (objects frozen before the interpreter's last collections):
    the outputs are complete, the exit code and the console output are the command's."""
    labels = tmp_path / "labels.csv"
    labels.write_text("tau,alarm\n1,1\n1,0\n0,0\n0,1\n1,1\n0,0\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "perception_safety.cli", "returns", "--binary", str(labels), "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith(f"wrote {tmp_path / 'returns.json'}")
    report = json.loads((tmp_path / "returns.json").read_text(encoding="utf-8"))
    assert report["binary"]["counts"] == {"TP": 2, "FP": 1, "FN": 1, "TN": 2}  # the six rows, counted by hand
