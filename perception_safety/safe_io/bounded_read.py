"""Read input files with a bound on the bytes read and JSON errors that name the file, line and column.

The read itself is bounded (``--config /dev/zero`` stops after ``limit + 1`` bytes, not at the out-of-memory
killer), non-UTF-8 bytes name their line and offset, and JSON nested too deeply for the parser is an error
naming the file, not a ``RecursionError`` traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError

MAX_JSON_BYTES = 1 << 30
"""Default bound of `load_json` (1 GiB: results.json, COCO annotation files)."""


_CHUNK = 1 << 20


class InputFileError(PerceptionSafetyError):
    """An input file is unreadable, too large, not UTF-8 or not valid JSON (the message names it)."""


def read_bytes(path: str | Path, limit: int, what: str = "file", error: type[Exception] = InputFileError) -> bytes:
    """At most ``limit`` bytes of ``path``; a longer file (or an endless device) raises ``error``."""
    path = Path(path)
    chunks: list[bytes] = []
    total = 0
    try:
        with open(path, "rb", buffering=0) as fh:
            while total <= limit:  # in chunks: read(limit + 1) would allocate the whole bound up front
                chunk = fh.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if total > limit:
        raise error(f"{path}: {what} is larger than {limit} bytes; refusing to read it")
    return b"".join(chunks)


def decode_utf8(data: bytes, path: str | Path, what: str = "file", error: type[Exception] = InputFileError) -> str:
    """``data`` as UTF-8 text; otherwise ``error`` naming the line and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text ({what}; byte {exc.start}: {data[exc.start]:#04x})") from None


def read_text(
    path: str | Path, limit: int, what: str = "file", error: type[Exception] = InputFileError
) -> str:
    """`read_bytes` then `decode_utf8`."""
    return decode_utf8(read_bytes(path, limit, what, error), path, what, error)


def parse_json(text: str, path: str | Path, what: str = "JSON", error: type[Exception] = InputFileError) -> Any:
    """``json.loads(text)`` with errors naming ``path:line:column``; too-deep nesting is an error, not a crash."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({what}): {exc.msg}") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to read ({what})") from None


def load_json(
    path: str | Path, what: str = "JSON", limit: int = MAX_JSON_BYTES, error: type[Exception] = InputFileError
) -> Any:
    """The JSON value in ``path`` (bounded read, UTF-8, errors name the file)."""
    return parse_json(read_text(path, limit, what, error), path, what, error)


__all__ = ["MAX_JSON_BYTES", "InputFileError", "decode_utf8", "load_json", "parse_json", "read_bytes", "read_text"]
