"""Provenance of an evaluation: tool version, git commit (from a checkout), date, hashes of config and inputs.

Bags can be gigabytes, so a bag's default fingerprint is cheap: sha256 over its ``metadata.yaml`` (message
counts, time range, topics, custom data) and the names and sizes of its files; ``full`` streams every file
through sha256 instead. Files (episode logs, the config) are always hashed in full. The date is the only
value that changes between two runs on the same inputs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import perception_safety
from perception_safety.io.bag_inputs import BagInput

HashMode = Literal["metadata", "full"]
_CHUNK = 1 << 20


def _file_sha256(path: Path, h: Any | None = None) -> Any:
    h = h or hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h


def bag_fingerprint(path: Path, mode: HashMode = "metadata") -> dict[str, Any]:
    """sha256 of a bag directory: metadata.yaml + file names and sizes (``metadata``) or all content (``full``).

    A dataset file is always hashed in full (it holds the annotations themselves; there is no metadata to hash).
    """
    if path.is_file():
        return {"sha256": _file_sha256(path).hexdigest(), "hashed": "full", "bytes": path.stat().st_size}
    files = sorted(p for p in path.iterdir() if p.is_file())
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{f.stat().st_size}\0".encode())
        if mode == "full" or f.name == "metadata.yaml":
            _file_sha256(f, h)
    return {"sha256": h.hexdigest(), "hashed": mode, "bytes": sum(f.stat().st_size for f in files)}


def git_commit(start: Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the checkout holding the package, or None when it is not run from a checkout."""
    root = (start or Path(perception_safety.__file__)).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head, "dirty": bool(status.strip())}


def provenance(
    config_text: str,
    inputs: Sequence[BagInput],
    episode_logs: Iterable[str | Path] = (),
    mode: HashMode = "metadata",
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The ``provenance`` block of results.json (everything but ``date_utc`` is the same on a rerun)."""
    git = git_commit()
    return {
        "package": "perception_safety",
        "version": perception_safety.__version__,
        "git_commit": git["commit"] if git else None,
        "git_dirty": git["dirty"] if git else None,
        "python": platform.python_version(),
        "date_utc": (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config_sha256": hashlib.sha256(config_text.encode("utf-8")).hexdigest(),
        "inputs": [
            {
                "path": str(b.path),
                "role": b.role,
                "named": b.named,
                "excluded": b.excluded or None,
                **bag_fingerprint(b.path, mode),
            }
            for b in inputs
        ],
        "episode_logs": [
            {"path": str(p), "sha256": _file_sha256(Path(p)).hexdigest(), "hashed": "full"} for p in episode_logs
        ],
    }


def header_lines(prov: dict[str, Any]) -> list[str]:
    """The report header's provenance, one short line each."""
    commit = prov.get("git_commit")
    git = (
        f"git {commit[:12]}{' (uncommitted changes)' if prov.get('git_dirty') else ''}" if commit else "not a checkout"
    )
    used = [i for i in prov["inputs"] if not i["excluded"]]
    return [
        f"{prov['package']} {prov['version']} · {git} · Python {prov['python']} · {prov['date_utc']}",
        f"config sha256 {prov['config_sha256'][:16]}… · {len(used)} input bag(s) read, "
        f"{len(prov['inputs']) - len(used)} excluded, {len(prov['episode_logs'])} episode log(s); "
        "hashes per input under 'Configuration and inputs'",
    ]
