"""No orphans: workers die with their parent, and SIGTERM stops a run the way Ctrl-C does.

`die_with_parent` runs in every local worker process: Linux delivers SIGKILL to it when the process that
started it dies, even by ``kill -9`` (prctl ``PR_SET_PDEATHSIG``); elsewhere a watchdog thread polls the
parent id. Workers ignore SIGINT: Ctrl-C reaches the whole process group, and the parent decides.
`sigterm_interrupts` turns SIGTERM in the parent into `Terminated` (a KeyboardInterrupt), so the same
clean-up runs for both: cancel what is queued, stop the workers, keep what finished.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


def die_with_parent(parent_pid: int) -> None:
    """Initializer of a worker process: exit when ``parent_pid`` is gone; leave SIGINT to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            _watch_parent(parent_pid)
    else:  # pragma: no cover - Linux is the supported platform
        _watch_parent(parent_pid)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _watch_parent(parent_pid: int, period_s: float = 0.5) -> None:
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(period_s)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises `Terminated` in the main thread (once; a second one is ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    fired = False

    def handler(signum: int, _frame: object) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise Terminated(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
