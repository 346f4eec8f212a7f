"""The input of ``compare``: a finished run's results.json whose compared parts have the expected shape.

A run folder is accepted only when its results.json is complete (`run_state`); then every section ``compare``
reads must be an object, every metric a number (interval ends and counts numbers or null), every requirement
an object: a hand-edited or damaged file is an error naming the file and the key, never a traceback.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perception_safety.pipeline.compare import CompareError, Value, metrics_of
from perception_safety.pipeline.run_state import load_complete_results

SECTIONS = ("confusion", "pcd", "verification", "bbsl", "returns", "requirements")
"""Top-level keys of results.json that ``compare`` reads."""

_LISTS = {"confusion": "metrics", "verification": "results", "requirements": "items"}


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _check_section(doc: dict[str, Any], key: str, path: Path) -> None:
    if key not in doc:
        return
    sec = doc[key]
    if not isinstance(sec, dict):
        raise CompareError(f"{path}: {key}: expected an object, got {_kind(sec)}")
    inner = _LISTS.get(key)
    if inner is None or inner not in sec:
        return
    items = sec[inner]
    if not isinstance(items, list):
        raise CompareError(f"{path}: {key}.{inner}: expected a list, got {_kind(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise CompareError(f"{path}: {key}.{inner}[{i}]: expected an object, got {_kind(item)}")
    if key == "requirements":
        for i, item in enumerate(items):
            if item.get("value") is not None and not _is_number(item["value"]):
                raise CompareError(f"{path}: requirements.items[{i}].value: expected a number or null, got "
                                   f"{_kind(item['value'])}")
            if item.get("status") is not None and not isinstance(item["status"], str):
                raise CompareError(f"{path}: requirements.items[{i}].status: expected a string")


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, str):
        return f"a string ({x[:40]!r})"
    return {dict: "an object", list: "a list", bool: "true/false"}.get(type(x), type(x).__name__)


def _check_value(v: Value, section: str, path: Path) -> None:
    for name, x, optional in (("value", v.value, False), ("lower", v.lower, True), ("upper", v.upper, True),
                              ("n", v.n, True)):
        if x is None and optional:
            continue
        if not _is_number(x) or (name == "n" and not float(x).is_integer()):
            want = "a count" if name == "n" else "a number"
            raise CompareError(f"{path}: {section}: metric {v.key!r}: {name} is {_kind(x)}, expected {want}")
        if name == "value" and not math.isfinite(float(x)):
            raise CompareError(f"{path}: {section}: metric {v.key!r}: value {x} is not finite")


def checked_metrics(doc: dict[str, Any], path: Path) -> None:
    """Raise `CompareError` naming ``path`` and the key when a compared part of ``doc`` has the wrong shape."""
    for key in SECTIONS:
        _check_section(doc, key, path)
        if key == "requirements" or key not in doc:
            continue
        try:
            values = metrics_of({key: doc[key]})
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise CompareError(f"{path}: {key}: unexpected structure ({what})") from None
        for v in values.values():
            _check_value(v, key, path)


def load_run(run: str | Path) -> dict[str, Any]:
    """The results of a finished ``evaluate`` run (folder or results.json), checked for ``compare``."""
    path = Path(run)
    path = path / "results.json" if path.is_dir() else path
    doc = load_complete_results(path)
    checked_metrics(doc, path)
    return doc
