"""The Ray instance a command starts dies with it, even after ``kill -9`` of the command (the driver).

Ray gives its GCS and raylet ``PR_SET_PDEATHSIG``, but the raylet's own helpers (dashboard agent, runtime-env
agent) outlive a killed driver for minutes (≈170 MB). `start_reaper` starts this file as a small watchdog
process in its own session, holding the read end of a pipe whose write end only the driver has. While the driver
lives it remembers the driver's Ray processes (children whose command line lies in Ray's package folder, and
all their descendants, with their start times). When the pipe closes, by `Reaper.finish` after
``ray.shutdown()`` or by the kernel when the driver dies however it dies, it SIGKILLs every remembered process
still running, and their descendants, and removes the instance's temporary folder. Linux only (``/proc``);
standard library only, so it starts in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.25
KILL_ROUNDS_S = 5.0


def _processes() -> dict[int, tuple[int, str]]:
    """``pid -> (parent pid, start time)`` of every process (start time: field 22 of /proc/PID/stat)."""
    out: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "(comm)": state ppid ... starttime is the 20th
        if len(fields) > 19:
            out[int(entry)] = (int(fields[1]), fields[19])
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _is_ray(pid: int, ray_dir: str) -> bool:
    if pid == os.getpid():  # this watchdog's own command line names the Ray folder too
        return False
    cmd = _cmdline(pid)
    return ray_dir in cmd or cmd.startswith("ray::")


def _descendants(roots: set[int], procs: dict[int, tuple[int, str]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = set(), list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def _remember(driver: int, ray_dir: str, known: dict[int, str]) -> None:
    """Add the driver's Ray children and everything below them (and below what is already known)."""
    procs = _processes()
    ray_children = {p for p, (pp, _) in procs.items() if pp == driver and p not in known and _is_ray(p, ray_dir)}
    alive_known = {p for p, start in known.items() if procs.get(p, (0, ""))[1] == start}
    for pid in ray_children | _descendants(ray_children | alive_known, procs):
        known.setdefault(pid, procs[pid][1])


def _kill_all(known: dict[int, str]) -> None:
    """SIGKILL every remembered process that is still the same process, and what it started, until none is left."""
    deadline = time.monotonic() + KILL_ROUNDS_S
    while time.monotonic() < deadline:
        procs = _processes()
        alive = {p for p, start in known.items() if procs.get(p, (0, ""))[1] == start}
        for pid in _descendants(alive, procs):
            known.setdefault(pid, procs[pid][1])
            alive.add(pid)
        if not alive:
            return
        alive.discard(os.getpid())
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def watch(driver: int, ray_dir: str, temp_dir: str | None) -> None:
    """Remember the driver's Ray processes until stdin closes; then kill them and remove ``temp_dir``."""
    known: dict[int, str] = {}
    stdin = sys.stdin.fileno()
    while True:
        _remember(driver, ray_dir, known)
        ready, _, _ = select.select([stdin], [], [], POLL_S)
        if ready and not os.read(stdin, 4096):
            break
    _remember(driver, ray_dir, known)  # a last look: the driver may still be alive (normal finish)
    _kill_all(known)
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)


class Reaper:
    """The driver's side: the watchdog process and the pipe that keeps it waiting."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def finish(self, timeout_s: float = 15.0) -> None:
        """After ``ray.shutdown()``: let the watchdog kill what is left of the instance and wait for it."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_reaper(ray_dir: str, temp_dir: str | None = None) -> Reaper | None:
    """Start the watchdog for the Ray instance this process is about to start (None off Linux)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - Linux is the supported platform
        return None
    args = [sys.executable, "-S", str(Path(__file__).resolve()), str(os.getpid()), ray_dir, temp_dir or ""]
    proc = subprocess.Popen(  # own session: Ctrl-C or a kill of the driver's group does not stop it first
        args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True
    )
    return Reaper(proc)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]), sys.argv[2], sys.argv[3] or None)
