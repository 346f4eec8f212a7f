"""Episode sweeps stop cleanly and never leave orphans (issue 19 item 10, issue 16 item 7); resume on Ray gives
the local result byte for byte (issue 17 item 2); names from the config never lead outside --out (issue 19
item 9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.executors import ExecutorConfig
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import EpisodeRunError, inside, monitors_for, run_sweep

from .conftest import write_tiny_config

SWEEP = [
    {"name": "brightness", "levels": [1, 5]},
    {"name": "smoke", "levels": [5]},
    {"name": "contrast", "levels": [3]},
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Five episodes run in this process, one at a time: (config, output folder)."""
    root = tmp_path_factory.mktemp("reference")
    cfg_path = write_tiny_config(root / "cfg", perturbations=SWEEP, include_clean=True)
    cfg = load_episodes_config(cfg_path)
    run_sweep(cfg, root / "out", monitors=monitors_for(cfg, cfg_path))
    return cfg_path, root / "out"


def _children(pid: int) -> dict[int, str]:
    """Every descendant process of ``pid``: pid -> command line."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    out: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, pp in parent.items():
            if pp == p and child not in out:
                try:
                    out[child] = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    out[child] = ""
                frontier.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _start_with_two_workers(cfg_path: Path, out: Path) -> tuple[subprocess.Popen, dict[int, str]]:
    cmd = [sys.executable, "-m", "perception_safety.cli", "episodes", "--config", str(cfg_path), "--out", str(out),
           "--jobs", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        kids = _children(proc.pid)
        if sum("multiprocessing.spawn" in c for c in kids.values()) >= 2:
            time.sleep(1.0)  # let the workers start their first episodes
            return proc, _children(proc.pid)
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no two workers within 120 s (exit {proc.poll()}): {proc.stderr.read().decode()[-2000:]}")


def _gone_within(pids, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_kill_9_of_the_parent_takes_its_workers_along(reference, tmp_path: Path) -> None:
    cfg_path, _ = reference
    proc, kids = _start_with_two_workers(cfg_path, tmp_path / "out")
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _gone_within(kids, 10.0) == [], f"orphans left running: {kids}"
    finally:
        for pid in kids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_stops_workers_within_seconds_and_resume_on_ray_equals_local(
    reference, ray_cluster, tmp_path: Path
) -> None:
    cfg_path, ref_out = reference
    out = tmp_path / "out"
    proc, kids = _start_with_two_workers(cfg_path, out)
    try:
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
        assert time.monotonic() - t0 < 10.0 and rc == 143, proc.stderr.read().decode()[-2000:]
        assert _gone_within(kids, 10.0) == [], f"workers still running after SIGTERM: {kids}"
    finally:
        for pid in [proc.pid, *kids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    finished = len(list((out / "logs").glob("*.jsonl"))) if (out / "logs").is_dir() else 0
    assert finished < 5 and not (out / "results.json").exists()
    cfg = load_episodes_config(cfg_path)
    report = run_sweep(cfg, out, resume=True, monitors=monitors_for(cfg, cfg_path),
                       executor=ExecutorConfig(kind="ray", memory_mb=256))
    assert (report.ran, report.skipped) == (5 - finished, finished)
    assert (out / "results.json").read_bytes() == (ref_out / "results.json").read_bytes()
    for log in sorted((ref_out / "logs").glob("*.jsonl")):
        assert (out / "logs" / log.name).read_bytes() == log.read_bytes()
    assert sorted(p.name for p in (out / "bags").iterdir()) == sorted(p.name for p in (ref_out / "bags").iterdir())


def test_a_scenario_name_cannot_lead_outside_out(tmp_path: Path, capsys) -> None:
    """Issue 19 item 9: a scenario named ``x/../../../ESCAPED`` used to make `episodes` write outside --out."""
    cfg_path = write_tiny_config(tmp_path / "a" / "b" / "cfg", scenarios=[{"name": "x/../../../ESCAPED"}],
                                 perturbations=[{"name": "brightness", "levels": [1]}])
    out = tmp_path / "a" / "b" / "out"
    assert main(["episodes", "--config", str(cfg_path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "episodes.scenarios" in err and "name" in err
    assert not [p for p in tmp_path.rglob("*ESCAPED*")]
    for bad in ("..", "x/../y", "", "."):
        with pytest.raises(EpisodeRunError, match="refusing to write outside"):
            inside(out, "logs", bad)
    assert inside(out, "logs", "000-crossing-none-0.jsonl") == out / "logs" / "000-crossing-none-0.jsonl"


def test_episodes_config_executor_section_and_flags(tmp_path: Path, capsys) -> None:
    cfg_path = write_tiny_config(tmp_path / "cfg", executor={"kind": "ray", "jobs": 0})
    assert main(["episodes", "--config", str(cfg_path), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "episodes.executor.jobs" in capsys.readouterr().err
    cfg_path = write_tiny_config(tmp_path / "cfg2")
    rc = main(["episodes", "--config", str(cfg_path), "--out", str(tmp_path / "o"), "--executor", "local",
               "--ray-address", "auto"])
    assert rc == 2 and "--ray-address needs --executor ray" in capsys.readouterr().err
    assert load_episodes_config(cfg_path).executor == ExecutorConfig()
