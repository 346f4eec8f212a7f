"""Our bag reader (io/bag/storage, mcap_file, sqlite_file) yields exactly what rosbags' Reader yields, or hands the
bag to rosbags and says why; damaged files end as rosbags ends them."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import CompressionMode

from perception_safety.io.bag.storage import FastBag, RosbagsBag, bag_metadata_document, open_bag
from tests.io.bag.bag_builders import RELIABLE, random_messages, reference, write_bag


def ours(path, keep=lambda c: True):
    with open_bag(path) as bag:
        conns = [c for c in bag.connections if keep(c)]
        got = [(c.id, c.topic, c.msgtype, t, bytes(d)) for c, t, d in bag.messages(conns)]
        return got, bag.note, type(bag)


def non_image(c) -> bool:
    return "Image" not in c.msgtype


@pytest.mark.parametrize(("storage", "compression", "qos"), [
    ("mcap", CompressionMode.NONE, ()),
    ("mcap", CompressionMode.NONE, (RELIABLE,)),
    ("mcap", CompressionMode.STORAGE, ()),
    ("sqlite3", CompressionMode.NONE, ()),
    ("sqlite3", CompressionMode.NONE, (RELIABLE,)),
])
def test_same_messages_in_the_same_order_as_rosbags(tmp_path, storage, compression, qos):
    """Several chunks (raw images between the small messages), stamps out of order and repeated."""
    bag = write_bag(tmp_path / "bag", random_messages(80, seed=3, image_bytes=40_000), storage, compression, qos)
    for keep in (lambda c: True, non_image, lambda c: c.topic == "/ground_truth"):
        want = reference(bag, keep)
        got, note, kind = ours(bag, keep)
        assert kind is FastBag and note == ""
        assert got == want and len(want) > 0


def test_the_chunks_of_the_mcap_test_bag_overlap_in_time(tmp_path):
    """The test above exercises the merge across chunks: the bag has several chunks whose times overlap."""
    from perception_safety.io.bag.mcap_file import McapFile

    bag = write_bag(tmp_path / "bag", random_messages(80, seed=3, image_bytes=40_000))
    f = McapFile(next(bag.glob("*.mcap")))
    try:
        spans = sorted((c.start, c.end) for c in f.chunks)
    finally:
        f.close()
    assert len(spans) >= 3 and any(a[1] >= b[0] for a, b in itertools.pairwise(spans))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_bag_of_two_files_reads_file_after_file(tmp_path, storage):
    first = write_bag(tmp_path / "a", random_messages(30, seed=1), storage)
    second = write_bag(tmp_path / "b", random_messages(30, seed=2), storage)
    bag = tmp_path / "two"
    bag.mkdir()
    suffix = ".mcap" if storage == "mcap" else ".db3"
    shutil.copy(next(first.glob(f"*{suffix}")), bag / f"two_0{suffix}")
    shutil.copy(next(second.glob(f"*{suffix}")), bag / f"two_1{suffix}")
    meta = yaml.safe_load((first / "metadata.yaml").read_text())
    meta["rosbag2_bagfile_information"]["relative_file_paths"] = [f"two_0{suffix}", f"two_1{suffix}"]
    (bag / "metadata.yaml").write_text(yaml.safe_dump(meta))
    want = reference(bag)
    got, note, kind = ours(bag)
    assert kind is FastBag and note == "" and got == want
    assert len(want) == 180


@pytest.mark.parametrize(("mode", "why"), [(CompressionMode.MESSAGE, "compression mode 'message'"),
                                           (CompressionMode.FILE, "compression mode 'file'")])
def test_what_we_do_not_read_goes_to_rosbags_with_the_reason(tmp_path, mode, why):
    bag = write_bag(tmp_path / "bag", random_messages(20), "mcap", mode)
    got, note, kind = ours(bag)
    assert kind is RosbagsBag and why in note and str(bag) in note
    assert got == reference(bag)


def test_an_inconsistent_chunk_found_while_reading_goes_to_rosbags(tmp_path):
    """A chunk whose records run past its end is found when the messages are planned: rosbags then reads the bag
    from its first message (nothing of ours was yielded)."""
    bag = write_bag(tmp_path / "bag", random_messages(20))
    path = next(bag.glob("*.mcap"))
    data = bytearray(path.read_bytes())
    first = data.index(b"\x05", 40)  # the first message record of the first chunk: its length made huge
    data[first + 1 : first + 9] = (10**9).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    outcome = _outcome(lambda: ours(bag)[:2])
    assert outcome == ("error", _outcome(lambda: reference(bag))[1]) or (
        outcome[0] == "ok" and outcome[1][0] == reference(bag) and "read with rosbags" in outcome[1][1])


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # the reference's error text is what ours must end with
        return "error", str(exc)


@pytest.mark.parametrize("compression", [CompressionMode.NONE, CompressionMode.STORAGE])
def test_damaged_mcap_files_end_exactly_as_with_rosbags(tmp_path, compression):
    """Random byte changes and truncations of a small MCAP file (uncompressed or zstd chunks): the same messages,
    or the same error text."""
    bag = write_bag(tmp_path / "bag", random_messages(12, seed=5), "mcap", compression)
    path = next(bag.glob("*.mcap"))
    clean = path.read_bytes()
    rng = np.random.default_rng(7)
    fast = 0
    for trial in range(250):
        data = bytearray(clean)
        if trial % 5 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                where = int(rng.integers(0, len(data)))
                data[where] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        want = _outcome(lambda: reference(bag))
        got = _outcome(lambda: ours(bag))
        if got[0] == "ok":
            fast += got[1][2] is FastBag and got[1][1] == ""
            got = ("ok", got[1][0])
        assert got == want, (trial, got if got[0] == "error" else "messages differ", want[0])
    # uncompressed: most damage is inside message bytes, read by our reader as damaged as rosbags reads them
    assert fast > (50 if compression == CompressionMode.NONE else 5)


def test_metadata_is_parsed_once_per_file_version(tmp_path):
    bag = write_bag(tmp_path / "bag", random_messages(3))
    first = bag_metadata_document(bag, ValueError)
    assert bag_metadata_document(bag, ValueError) is first
    text = (bag / "metadata.yaml").read_text()
    (bag / "metadata.yaml").write_text(text + "\n# edited\n")
    assert bag_metadata_document(bag, ValueError) is not first


def test_select_bags_and_the_reader_share_one_parse_of_metadata_yaml(tmp_path):
    from perception_safety.io.bag import storage
    from perception_safety.io.bag_inputs import select_bags

    bag = write_bag(tmp_path / "bag", random_messages(3))
    storage._parsed.cache_clear()
    assert [b.path for b in select_bags([bag])] == [bag]
    with open_bag(bag) as opened:
        assert isinstance(opened, FastBag)
    assert storage._parsed.cache_info().misses == 1


def test_damaged_sqlite3_files_end_exactly_as_with_rosbags(tmp_path):
    """Truncated and byte-changed .db3 files: the same messages, or the same error text as rosbags."""
    bag = write_bag(tmp_path / "bag", random_messages(40, seed=6, image_bytes=3000), "sqlite3")
    path = next(bag.glob("*.db3"))
    clean = path.read_bytes()
    rng = np.random.default_rng(8)
    outcomes = set()
    for trial in range(60):
        data = bytearray(clean)
        if trial % 3 == 0:
            data = data[: int(rng.integers(100, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 30))):
                data[int(rng.integers(100, len(data)))] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        want = _outcome(lambda: reference(bag))
        got = _outcome(lambda: ours(bag))
        got = got if got[0] == "error" else ("ok", got[1][0])
        assert got == want, (trial, got[0], want[0], got[1] if got[0] == "error" else "", want[1] if want[0] ==
                             "error" else "")
        outcomes.add(want[0])
    assert outcomes == {"ok", "error"}


def test_a_surprise_in_our_reader_hands_the_bag_to_rosbags_and_says_so(tmp_path, monkeypatch):
    from perception_safety.io.bag import mcap_file

    bag = write_bag(tmp_path / "bag", random_messages(10))

    def broken(*args, **kwargs):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(mcap_file.McapFile, "plan", broken)
    got, note, _ = ours(bag)
    assert got == reference(bag) and "RuntimeError: a bug of ours" in note
    monkeypatch.setattr(mcap_file.McapFile, "__init__", broken)
    got, note, kind = ours(bag)
    assert kind is RosbagsBag and got == reference(bag) and "RuntimeError: a bug of ours" in note


@pytest.mark.parametrize("name", ["lz4", "zstd", ""])
def test_chunks_compressed_otherwise_read_as_rosbags_reads_them(tmp_path, name):
    """rosbags' writer makes uncompressed or zstd chunks; ``ros2 bag`` may write lz4 ones: the same file rewritten
    with lz4 (and back to zstd / uncompressed) chunks reads the same through both readers."""
    import lz4.frame

    from tests.io.bag.bag_builders import recompress_mcap

    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd
    compress = {"lz4": lz4.frame.compress, "zstd": zstd.compress, "": bytes}[name]
    bag = write_bag(tmp_path / "bag", random_messages(60, seed=9, image_bytes=30_000), "mcap", CompressionMode.STORAGE)
    want = reference(bag)
    recompress_mcap(next(bag.glob("*.mcap")), name, compress, zstd.decompress)
    assert reference(bag) == want  # the rewritten file is a valid MCAP file for rosbags
    from perception_safety.io.bag.mcap_file import McapFile

    f = McapFile(next(bag.glob("*.mcap")))
    try:
        assert len(f.chunks) >= 2 and {c.compression for c in f.chunks} == {name}
    finally:
        f.close()
    got, note, kind = ours(bag)
    assert kind is FastBag and note == "" and got == want


def test_which_chunks_hold_a_channel_follows_the_message_index_spans_as_rosbags_counts_them(tmp_path):
    """A message-index offset moved so that its span holds less than one 16-byte entry: rosbags then skips the
    chunk when only that channel is wanted, and so does our reader (same messages)."""
    import struct

    bag = write_bag(tmp_path / "bag", random_messages(80, seed=4, image_bytes=40_000))  # several chunks
    path = next(bag.glob("*.mcap"))
    data = bytearray(path.read_bytes())
    before = {cid: len(reference(bag, lambda c, cid=cid: c.id == cid)) for cid in (1, 2, 3, 4)}
    pos = struct.unpack_from("<Q", data, len(data) - 8 - 20)[0]
    moved = set()
    while data[pos] not in (0x02, 0x0E):
        length = struct.unpack_from("<Q", data, pos + 1)[0]
        if data[pos] == 0x08 and not moved:
            n = struct.unpack_from("<I", data, pos + 9 + 32)[0]
            entries = sorted((*struct.unpack_from("<HQ", data, pos + 9 + 36 + k)[::-1], k) for k in range(0, n, 10))
            (_, channel, k), (second, _, _) = entries[0], entries[1]
            struct.pack_into("<Q", data, pos + 9 + 36 + k + 2, second - 15 - 10)  # a span of 10 bytes: 0 entries
            moved.add(channel)
        pos += 9 + length
    path.write_bytes(bytes(data))
    (channel,) = moved
    for keep in (lambda c: c.id == channel, lambda c: True):
        want = reference(bag, keep)
        got, note, kind = ours(bag, keep)
        assert kind is FastBag and note == "" and got == want
    assert 0 < len(reference(bag, lambda c: c.id == channel)) < before[channel]  # the first chunk skipped
