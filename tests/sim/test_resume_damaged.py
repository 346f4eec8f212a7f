"""Issue 25 item 8: `episodes --resume` on a folder with a damaged episode log or sweep record names the file
(exit 2) instead of a traceback or a summary that silently leaves the damaged episode out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import monitors_for, run_sweep

from .conftest import write_tiny_config


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("resume_damaged")
    cfg_path = write_tiny_config(root / "cfg", perturbations=[{"name": "smoke", "levels": [5]}])
    cfg = load_episodes_config(cfg_path)
    run_sweep(cfg, root / "out", monitors=monitors_for(cfg, cfg_path))
    return cfg_path, root / "out"


def _resume(cfg_path: Path, out: Path) -> int:
    return main(["episodes", "--config", str(cfg_path), "--out", str(out), "--resume", "--no-progress"])


def _copy(finished: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    cfg_path, out = finished
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (log,) = sorted((copy / "logs").glob("*.jsonl"))
    return cfg_path, copy, log


def test_undamaged_folder_resumes(finished, tmp_path):
    cfg_path, copy, _ = _copy(finished, tmp_path)
    assert _resume(cfg_path, copy) == 0


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda b: b[: len(b) // 2], r"damaged episode log: .*torn"),  # cut in the middle of a record
        (lambda b: b.replace(b'"type":"step"', b'"type":"stop"', 1), r"damaged episode log: .*:\d+: expected an "
                                                                      r"object with type begin/step/end"),
        (lambda b: b"\x89PNG\r\n\x1a\n" + b, r"damaged episode log: .*:1: not a JSON record"),
        (lambda b: b'{"type":"begin"'.join(b.split(b'{"type":"begin"')[:2]),  # the first rollout only
         r"damaged episode log: .*rollouts \['perception'\], expected"),
    ],
)
def test_damaged_log_names_the_file(finished, tmp_path, capsys, damage, expected):
    import re

    cfg_path, copy, log = _copy(finished, tmp_path)
    log.write_bytes(damage(log.read_bytes()))
    assert _resume(cfg_path, copy) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(log) in err and "delete" in err and re.search(expected, err), err


@pytest.mark.parametrize("content", [b"\xff\xfe binary", b"[1, 2]", b"[" * 100_000])
def test_damaged_sweep_record_names_the_file(finished, tmp_path, capsys, content):
    cfg_path, copy, _ = _copy(finished, tmp_path)
    record = next(p for p in copy.iterdir() if p.suffix == ".json" and p.name != "results.json")
    record.write_bytes(content)
    assert _resume(cfg_path, copy) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(record) in err and "choose a new --out" in err
