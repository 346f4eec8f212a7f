"""Write output files atomically, and never through anything that is not a regular file.

Every command writes its files through these helpers: the target must be absent or a regular file (a device
node, FIFO, socket, directory or symbolic link is refused with `OutputPathError`, exit 2), the content goes to a
temporary file in the same folder, is flushed to disk (fsync) and renamed over the target, so a reader sees
either the old file or the complete new one, and ``--out /dev/full`` (even as root) never replaces a device.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from perception_safety.errors import PerceptionSafetyError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


class OutputPathError(PerceptionSafetyError):
    """An output path is not a regular file (device, FIFO, socket, directory, symlink) or cannot be written."""


def check_output(path: str | Path) -> Path:
    """``path`` if it may be written: absent or a regular file, not a symbolic link; else `OutputPathError`."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except NotADirectoryError:
        raise OutputPathError(f"{path}: cannot write: a parent of it is a file, not a folder") from None
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot check the output file: {exc.strerror or exc}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise OutputPathError(f"{path}: is a symbolic link; refusing to write through it (give the real path)")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise OutputPathError(f"{path}: is {kind}, not a regular file; refusing to write to it")
    return path


def _ensure_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"{folder}: cannot create the output folder: {exc.strerror or exc}") from exc
    if not folder.is_dir():
        raise OutputPathError(f"{folder}: the output folder is not a directory")


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory; the rename is still atomic
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path, sync_folder: bool = True) -> Iterator[Path]:
    """A temporary path next to ``path`` (same suffix, for writers that pick the format by it) to write to.

    When the block ends without an exception the file is fsynced and renamed over ``path``; otherwise it is
    removed and ``path`` is untouched. The output folder is created when missing. ``sync_folder=False``: the
    folder's entry is left for the caller to flush (`write_files`, once for many files).
    """
    path = check_output(path)
    folder = path.parent
    _ensure_folder(folder)
    tmp = folder / f".{path.stem}.{secrets.token_hex(4)}.partial{path.suffix}"
    try:
        yield tmp
        try:
            fd = os.open(tmp, os.O_RDONLY)
        except FileNotFoundError:
            raise OutputPathError(f"{path}: the writer produced no file") from None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        check_output(path)  # the target may have been replaced by a link or device meanwhile
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    if sync_folder:
        _fsync_folder(folder)


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", sync_folder: bool = True, **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(temporary, mode, **kwargs)`` inside `atomic_path` (``mode`` "w" or "wb")."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode {mode!r}; expected 'w' or 'wb'")
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path, sync_folder) as tmp:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with open(os.open(tmp, flags, 0o666), mode, **kwargs) as fh:  # 0o666 & ~umask, like open()
            yield fh
            fh.flush()


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_files(folder: str | Path, files: Mapping[str, bytes]) -> list[Path]:
    """Write each ``name -> data`` into ``folder`` as `write_bytes` does (checked, fsynced, renamed), the folder's
    entries flushed to disk once at the end rather than once per file (a report's many small thumbnails)."""
    folder = Path(folder)
    out = []
    for name, data in files.items():
        with atomic_open(folder / name, "wb", sync_folder=False) as fh:
            fh.write(data)
        out.append(folder / name)
    if out:
        _fsync_folder(folder)
    return out


__all__ = ["OutputPathError", "atomic_open", "atomic_path", "check_output", "write_bytes", "write_files",
           "write_text"]
