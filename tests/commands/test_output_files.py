"""Issue 25 item 6: commands never write through a device node, FIFO or symlink (exit 2, target untouched)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.io.dataset import read_jsonl_frames

LABEL = "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01\n"


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    d = tmp_path / "label_2"
    d.mkdir()
    (d / "000000.txt").write_text(LABEL)
    return d


def _convert(labels: Path, out: Path) -> int:
    return main(["convert", "kitti", str(labels), "--out", str(out)])


def test_convert_to_dev_full_leaves_the_device_node(labels, capsys):
    """As root the old code replaced /dev/full with a 200-byte file; now: exit 2, the device is still a device."""
    before = os.lstat("/dev/full")
    assert _convert(labels, Path("/dev/full")) == 2
    assert "/dev/full: is a character device, not a regular file" in capsys.readouterr().err
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_convert_to_a_fifo_is_refused_without_blocking(labels, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert _convert(labels, fifo) == 2
    assert f"{fifo}: is a FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_convert_through_a_symlink_is_refused_and_the_linked_file_untouched(labels, tmp_path, capsys):
    elsewhere = tmp_path / "outside" / "important.txt"
    elsewhere.parent.mkdir()
    elsewhere.write_text("do not overwrite")
    link = tmp_path / "k.jsonl"
    link.symlink_to(elsewhere)
    assert _convert(labels, link) == 2
    assert f"{link}: is a symbolic link" in capsys.readouterr().err
    assert link.is_symlink() and elsewhere.read_text() == "do not overwrite"


def test_convert_creates_a_missing_output_folder_and_leaves_no_temporary(labels, tmp_path):
    out = tmp_path / "new" / "deeper" / "k.jsonl"
    assert _convert(labels, out) == 0
    (frame,) = read_jsonl_frames(out)
    assert frame.ground_truth[0].class_id == "pedestrian"
    assert [p.name for p in out.parent.iterdir()] == ["k.jsonl"]


def test_pcd_refuses_a_symlinked_output_file_in_its_folder(tmp_path, capsys):
    samples = tmp_path / "s.csv"
    samples.write_text("distance_m,y,missed\n" + "".join(f"{d},{0.0 if d > 30 else 0.9},{int(d > 30)}\n"
                                                           for d in range(1, 60)))
    out = tmp_path / "o"
    out.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    (out / "pcd.json").symlink_to(victim)
    assert main(["pcd", str(samples), "--out", str(out), "--no-plots", "--n-boot", "20"]) == 2
    assert f"{out / 'pcd.json'}: is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "{}"


def test_episode_log_writer_refuses_a_fifo_or_symlink(tmp_path):
    """Episode logs are appended to (not atomic), but never opened through a FIFO (it would block) or a link."""
    from perception_safety.io.episode_log import EpisodeLogWriter
    from perception_safety.safe_io import OutputPathError

    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="is a FIFO"), EpisodeLogWriter(fifo):
        pass
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link.jsonl"
    link.symlink_to(victim)
    with pytest.raises(OutputPathError, match="is a symbolic link"), EpisodeLogWriter(link):
        pass
    assert victim.read_text() == "keep"
