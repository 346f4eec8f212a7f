"""Issue 25 item 9: the Ray instance a command starts dies with it, even when the command is killed with SIGKILL.

A real `perception-safety evaluate --executor ray` starts its own Ray instance; its one bag's data file is a FIFO
nobody writes, so the bag's Ray task blocks reading it and the run cannot finish. Once that task runs we record
every process below the command (GCS, raylet, agents, workers, the watchdog), `kill -9` the command, and require
all of them gone within a bounded time (before the fix the dashboard and runtime-env agents lived on for
minutes), and the instance's temporary folder removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames

GONE_WITHIN_S = 15.0


def _procs() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, state) from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text(errors="replace")
            except OSError:
                continue
            f = text[text.rfind(")") + 2:].split()
            out[int(entry)] = (int(f[1]), f[19], f[0])
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(root: int) -> dict[int, str]:
    procs = _procs()
    out: dict[int, str] = {}
    stack = [root]
    while stack:
        parent = stack.pop()
        for pid, (ppid, start, _) in procs.items():
            if ppid == parent and pid not in out:
                out[pid] = start
                stack.append(pid)
    return out


def _alive(known: dict[int, str]) -> list[int]:
    procs = _procs()
    return [p for p, start in known.items() if p in procs and procs[p][1] == start and procs[p][2] != "Z"]


def _hanging_bag(root: Path) -> Path:
    frame = Frame(0, (Detection(Box(10, 10, 50, 90), "pedestrian", 0.9),),
                  (GroundTruthObject(Box(10, 10, 50, 90), "pedestrian", 10.0),))
    bag = root / "bags" / "hang"
    write_frames(bag, [frame])
    (data,) = bag.glob("*.mcap")
    data.unlink()
    os.mkfifo(data)  # opening it for reading blocks until a writer appears: never
    return root / "bags"


def test_kill_9_of_the_driver_takes_its_ray_instance_along(tmp_path):
    bags = _hanging_bag(tmp_path)
    tmp = Path(tempfile.mkdtemp(prefix="psk", dir="/tmp"))  # short: Ray's socket paths must fit in 107 bytes
    env = {**os.environ, "TMPDIR": str(tmp)}
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(
        [sys.executable, "-m", "perception_safety.cli", "evaluate", str(bags), "--executor", "ray", "--jobs", "1",
         "--out", str(tmp_path / "out")],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    known: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and driver.poll() is None:
            known.update(_descendants(driver.pid))
            if any(_cmdline(p).startswith("ray::call_captured") for p in _alive(known)):
                break
            time.sleep(0.3)
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        assert any(_cmdline(p).startswith("ray::call_captured") for p in _alive(known)), "task never started"
        time.sleep(1.0)
        known.update(_descendants(driver.pid))
        names = {p: _cmdline(p)[:80] for p in _alive(known)}
        assert any("raylet" in n for n in names.values()) and any("agent" in n.lower() for n in names.values())
        assert list(tmp.glob("ps-ray-*")), "the instance's temp folder was not under TMPDIR"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(known) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {p: names.get(p, _cmdline(p)[:80]) for p in _alive(known)}
        assert left == {}, f"still running {GONE_WITHIN_S} s after kill -9 of the driver: {left}"
        assert not list(tmp.glob("ps-ray-*")), "the Ray instance's temporary folder was left behind"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)
        for pid in _alive(known):  # never leak processes from a failed test
            os.kill(pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
