"""Provenance: cheap and full bag fingerprints, git commit of a checkout, the block's keys."""

from __future__ import annotations

import datetime as dt
import hashlib

from perception_safety.io.bag_inputs import select_bags
from perception_safety.pipeline.provenance import bag_fingerprint, git_commit, header_lines, provenance


def _bag(path, payload=b"abc"):
    path.mkdir(parents=True)
    (path / "metadata.yaml").write_text("rosbag2_bagfile_information: {message_count: 3}\n")
    (path / "data.mcap").write_bytes(payload)
    return path


def test_fingerprint_metadata_and_full(tmp_path):
    bag = _bag(tmp_path / "b")
    meta = bag_fingerprint(bag)
    # metadata mode: names and sizes of every file, content of metadata.yaml only (recomputed independently)
    h = hashlib.sha256()
    h.update(b"data.mcap\x003\x00")
    h.update(b"metadata.yaml\x00" + str((bag / "metadata.yaml").stat().st_size).encode() + b"\x00")
    h.update((bag / "metadata.yaml").read_bytes())
    assert meta["sha256"] == h.hexdigest()
    assert meta["hashed"] == "metadata" and meta["bytes"] == 3 + (bag / "metadata.yaml").stat().st_size
    # same size, other content: only the full hash sees it
    (bag / "data.mcap").write_bytes(b"xyz")
    assert bag_fingerprint(bag)["sha256"] == meta["sha256"]
    full = bag_fingerprint(bag, "full")
    (bag / "data.mcap").write_bytes(b"abc")
    assert bag_fingerprint(bag, "full")["sha256"] != full["sha256"]


def test_provenance_block(tmp_path):
    _bag(tmp_path / "bags" / "one")
    log = tmp_path / "ep.jsonl"
    log.write_text('{"type": "x"}\n')
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    prov = provenance("a: 1\n", select_bags([tmp_path / "bags"]), [log], now=when)
    assert prov["date_utc"] == "2026-01-02T03:04:05Z"
    assert prov["config_sha256"] == hashlib.sha256(b"a: 1\n").hexdigest()
    assert prov["episode_logs"][0]["sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    assert prov["inputs"][0]["role"] == "recording" and prov["inputs"][0]["excluded"] is None
    lines = header_lines(prov)
    assert "2026-01-02T03:04:05Z" in lines[0] and "1 input bag(s) read" in lines[1]


def test_git_commit_only_from_a_checkout(tmp_path):
    assert git_commit(tmp_path / "pkg" / "__init__.py") is None
