"""A controller given as code: ``module:function``, a vectorised callable with the built-in signature."""

from __future__ import annotations

import importlib
import inspect
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
