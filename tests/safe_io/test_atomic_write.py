"""Atomic writes: never through a device node, FIFO, socket, directory or symlink; complete file or none."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from perception_safety.safe_io import (
    OutputPathError,
    atomic_open,
    atomic_path,
    check_output,
    write_bytes,
    write_files,
    write_text,
)


def _special_targets(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "link.txt"
    link.symlink_to(victim)
    sock_path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    sock.close()
    (tmp_path / "folder").mkdir()
    return {"character device": Path("/dev/full"), "FIFO": fifo, "symbolic link": link, "socket": sock_path,
            "directory": tmp_path / "folder"}


def test_every_special_target_is_refused_and_left_as_it_was(tmp_path):
    for kind, target in _special_targets(tmp_path).items():
        before = os.lstat(target)
        with pytest.raises(OutputPathError, match=rf"^{target}: is (a |an )?.*{kind.split()[0]}"):
            write_text(target, "x" * 200)
        after = os.lstat(target)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino, kind
    assert (tmp_path / "victim.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "folder", "link.txt", "s.sock", "victim.txt"]


def test_replaces_a_regular_file_completely_and_creates_the_folder(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    write_text(target, "first")
    inode = target.stat().st_ino
    write_bytes(target, b"second")
    assert target.read_bytes() == b"second" and target.stat().st_ino != inode  # renamed over, not rewritten
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target, "w") as fh:
        fh.write("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_temporary_keeps_the_suffix_and_a_writer_that_writes_nothing_is_an_error(tmp_path):
    with atomic_path(tmp_path / "video.mp4") as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".mp4" and not tmp.exists()
        tmp.write_bytes(b"v")
    assert (tmp_path / "video.mp4").read_bytes() == b"v"
    with pytest.raises(OutputPathError, match="produced no file"), atomic_path(tmp_path / "none.png"):
        pass
    assert not (tmp_path / "none.png").exists()


def test_output_folder_that_is_a_file_is_named(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputPathError, match=r"out.json: cannot write: a parent of it is a file"):
        write_text(tmp_path / "file" / "out.json", "{}")
    assert check_output(tmp_path / "new.json") == tmp_path / "new.json"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_safe_io_is_layer_neutral():
    """Science modules use safe_io: it must load nothing of the package but `perception_safety.errors`."""
    import json
    import subprocess
    import sys

    code = ("import json, sys, perception_safety.safe_io\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('perception_safety'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(out.stdout)) - {"perception_safety", "perception_safety.errors"}
    assert {m for m in loaded if not m.startswith("perception_safety.safe_io")} == set()


def test_many_files_are_each_written_atomically_and_the_folder_flushed_once(tmp_path, monkeypatch):
    import perception_safety.safe_io.atomic_write as aw

    folder = tmp_path / "thumbs"
    folder.mkdir()
    (folder / "b.jpg").write_bytes(b"old")
    (tmp_path / "victim").write_text("keep me")
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(aw.os, "fsync", lambda fd: synced.append(os.fstat(fd).st_mode) or real(fd))
    paths = write_files(folder, {"a.jpg": b"\xff\xd8a", "b.jpg": b"\xff\xd8b"})
    assert paths == [folder / "a.jpg", folder / "b.jpg"]
    assert [p.read_bytes() for p in paths] == [b"\xff\xd8a", b"\xff\xd8b"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.jpg", "b.jpg"]  # no temporary left
    assert [stat.S_ISDIR(m) for m in synced] == [False, False, True]  # each file, then the folder once
    (folder / "c.jpg").symlink_to(tmp_path / "victim")
    with pytest.raises(OutputPathError, match="symbolic link"):
        write_files(folder, {"c.jpg": b"x"})
    assert (tmp_path / "victim").read_text() == "keep me"
    assert write_files(tmp_path / "none", {}) == [] and not (tmp_path / "none").exists()
