"""Safe YAML loading into pydantic models; errors name the file, the key and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from perception_safety.errors import PerceptionSafetyError

M = TypeVar("M", bound=BaseModel)


class ConfigError(PerceptionSafetyError):
    """A configuration file is unreadable, not YAML, or fails validation."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping with ``yaml.safe_load``; an empty file is an empty mapping."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def format_validation_error(source: str, exc: ValidationError, prefix: str = "") -> str:
    """One line per problem: ``source: key.path: message (got value)``."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + tuple(err["loc"])) or "<root>"
        got = err.get("input")
        got_text = "" if err["type"] == "missing" else f" (got {got!r})"
        lines.append(f"{source}: {key}: {err['msg']}{got_text}")
    return "\n".join(lines)


def model_from_mapping(data: dict[str, Any], model: type[M], source: str, prefix: str = "") -> M:
    """Validate a mapping into ``model``; ``source`` and ``prefix`` name it in errors."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc, prefix)) from exc


def load_model(path: str | Path | None, model: type[M], section: str | None = None) -> M:
    """Load ``model`` from a YAML file (optionally one top-level ``section`` of it).

    ``path=None`` gives the model's defaults; a missing section gives defaults too.
    """
    if path is None:
        return model()
    data = load_yaml(path)
    if section is not None:
        sub = data.get(section, {})
        if sub is None:
            sub = {}
        if not isinstance(sub, dict):
            raise ConfigError(f"{path}: {section}: expected a mapping, got {type(sub).__name__}")
        return model_from_mapping(sub, model, str(path), section)
    return model_from_mapping(data, model, str(path))
