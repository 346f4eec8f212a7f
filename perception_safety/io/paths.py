"""Resolve file parameters (specs, configs): absolute, relative to the working directory, or to the package share."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from perception_safety.io.config import ConfigError

PACKAGE = "perception_safety"


def _share_dirs() -> list[Path]:
    dirs = []
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        dirs.append(Path(prefix) / "share" / PACKAGE)
    dirs.append(Path(sys.prefix) / "share" / PACKAGE)  # pip install (setup.py data_files)
    dirs.append(Path(__file__).resolve().parents[2])  # source checkout / editable install
    return dirs


def resolve_file(value: str, key: str) -> Path:
    """The existing file ``value`` names; a relative path is tried in the cwd, then the package share dirs."""
    path = Path(value).expanduser()
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, *(d / path for d in _share_dirs())]
    for c in candidates:
        if c.is_file():
            return c
    raise ConfigError(f"{key}: file {value!r} not found (tried {', '.join(str(c) for c in candidates)})")
