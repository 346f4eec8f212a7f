"""Task functions for the executor tests, a top-level module (its folder is put on ``sys.path``) so that spawned
local workers import it by name; Ray workers get it pickled by value (`ray_by_value`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from perception_safety.errors import PerceptionSafetyError


def square_or_fail(x: int) -> int:
    if x == 2:
        raise PerceptionSafetyError(f"input {x} is bad")
    return x * x


def hang_once(marker: str, x: int) -> int:
    """The first attempt of the task whose ``marker`` file is absent records its pid and hangs (to be killed)."""
    m = Path(marker)
    if x == 1 and not m.exists():
        m.write_text(str(os.getpid()))
        time.sleep(120)
    return x * x


def die_on_zero(x: int) -> int:
    """Kills its own worker process for 0 (a native crash or an OOM kill looks like this to the executor)."""
    if x == 0:
        os._exit(3)
    return x + 100


def hang(folder: str, x: int) -> int:
    """Records its pid in ``folder`` and hangs."""
    (Path(folder) / f"{x}.pid").write_text(str(os.getpid()))
    time.sleep(120)
    return x


def wait_for_pid(path: Path, timeout_s: float = 60.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path}: no pid within {timeout_s} s")


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by its parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone_within(pids: list[int], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def ray_by_value() -> None:
    """Ship this module's functions to Ray workers by value (the workers do not have its folder on sys.path)."""
    import sys

    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def on_server(server: str, folder: str, x: int) -> tuple[str, int]:
    """Uses ``server`` exclusively (a lock file per server; a second concurrent user fails); ``dead:*`` servers are
    gone (`SlotUnavailableError`); input 99 is a bad input on any server."""
    import time

    from perception_safety.executors.slots import SlotUnavailableError

    if server.startswith("dead"):
        raise SlotUnavailableError(f"{server} does not answer")
    if x == 99:
        raise ValueError("bad input 99")
    lock = Path(folder) / f"{server.replace(':', '_')}.lock"
    fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # FileExistsError if the server is already in use
    try:
        time.sleep(0.05)
    finally:
        os.close(fd)
        lock.unlink()
    return server, x
