"""A controller given as code: ``module:function``, a vectorised callable with the built-in signature.

Each call runs under a time limit (`with_time_limit`, default `DEFAULT_TIME_LIMIT_S` per call): a controller that
does not answer in time is an error, never a result.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Any

from perception_safety.verification.errors import VerificationError


def load_callable(spec: str) -> tuple[Callable[..., Any], bool]:
    """Import ``module:function``; returns it and whether it takes an ``alarm`` keyword (acts on alarms itself)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module.strip() or not attr.strip():
        raise VerificationError(f"python controller {spec!r}: expected 'module:function'")
    try:
        mod = importlib.import_module(module.strip())
    except ImportError as exc:
        raise VerificationError(f"python controller {spec!r}: cannot import module {module!r}: {exc}") from exc
    obj: Any = mod
    for part in attr.strip().split("."):
        if not hasattr(obj, part):
            raise VerificationError(f"python controller {spec!r}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise VerificationError(f"python controller {spec!r}: {attr!r} is not callable")
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return obj, False
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 4 and not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
        raise VerificationError(
            f"python controller {spec!r}: takes {len(positional)} positional parameter(s); expected "
            "(x, v, kind, geometry) like the built-in controllers"
        )
    return obj, "alarm" in params


DEFAULT_TIME_LIMIT_S = 1.0
"""Time limit of one call of a ``python:`` controller (``controller: {python: m:f, time_limit_s: S}``)."""


def with_time_limit(fn: Callable[..., Any], limit_s: float, name: str) -> Callable[..., Any]:
    """``fn`` whose every call must return within ``limit_s`` seconds, else `VerificationError`.

    The call runs in a daemon thread so that even code that never yields (a C loop) cannot hold the caller; a
    call that overruns is abandoned (its thread ends with the process) and its result, if any, is never used.
    """

    def limited(*args: Any, **kwargs: Any) -> Any:
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=call, name=f"controller {name}", daemon=True)
        worker.start()
        worker.join(limit_s)
        if worker.is_alive():
            kind = args[2] if len(args) > 2 else kwargs.get("kind", "?")
            raise VerificationError(
                f"controller {name}: no answer within its time limit of {limit_s:g} s (kind {kind!r}); a timeout is "
                "an error, never a result (raise time_limit_s in the controller's config if it is just slow)"
            )
        if "error" in box:
            raise box["error"]
        return box["value"]

    return limited
