"""What every executor shares: a task's outcome and the wrapper that turns its exception into data.

A task is a module-level function and its arguments (picklable: it may run in another process or on another
machine). An exception raised by the function is the task's result ("failed: reason"), not a crash of the
run, and is not retried (the same input fails the same way); a dead worker process is retried.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perception_safety.errors import PerceptionSafetyError

OnDone = Callable[["Outcome"], None]


@dataclass(frozen=True)
class Outcome:
    """The end of one task: its value, or why it failed (after its retries), and how often it ran."""

    index: int
    value: Any = None
    error: str | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


class ExecutorError(PerceptionSafetyError):
    """The executor cannot start (Ray not reachable, bad address, ...)."""


def failure_reason(exc: BaseException) -> str:
    """A one-line reason; for an unexpected exception (a bug, not bad input) also where it was raised."""
    text = str(exc).strip() or type(exc).__name__
    if len(text) > 2000:
        text = text[:2000] + " ..."
    if isinstance(exc, PerceptionSafetyError):
        return text
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {text}{where}"


def call_captured(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """``(True, fn(*args))``, or ``(False, reason)`` when ``fn`` raised an ``Exception``."""
    try:
        return True, fn(*args)
    except Exception as exc:
        return False, failure_reason(exc)
