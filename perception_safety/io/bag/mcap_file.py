"""One MCAP storage file of a rosbag2 bag, read through its summary section (chunk indexes), without rosbags.

What rosbags' reader would yield, in the same order: the chunks holding a wanted channel (by the chunk index's
message-index offsets), every message record of a wanted channel inside such a chunk whose log time lies in the
chunk's time range, ordered by (log time, chunk offset, position in the chunk). Uncompressed chunks are read from a
read-only memory map (image records are skipped, never copied); zstd and lz4 chunks are decompressed whole, their
CRC checked when set. Anything this reader does not handle, or finds inconsistent, raises `Unhandled` before a
message is yielded: the caller then reads the bag with rosbags (the reference behaviour, errors included).
"""

from __future__ import annotations

import importlib
import mmap
import struct
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"\x89MCAP0\r\n"
_FOOTER_HEAD = b"\x02\x14\x00\x00\x00\x00\x00\x00\x00"  # opcode 0x02, record length 20
_SCHEMA_ENCODINGS = frozenset({"ros2msg", "ros2idl", "omgidl", ""})
MAX_KEPT_BYTES = 256 * 1024 * 1024
"""Bytes of wanted messages from compressed chunks held at once; more (e.g. every image of a long bag) streams
through rosbags instead."""

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_OP_LEN = struct.Struct("<BQ")
_MESSAGE_HEAD = struct.Struct("<HIQQ")  # channel id, sequence, log time, publish time
_CHUNK_INDEX_HEAD = struct.Struct("<QQQQ")  # start time, end time, chunk offset, chunk length
_STATISTICS_HEAD = 46  # counts and times (42 bytes) + the channel count map's byte length


class Unhandled(Exception):  # noqa: N818 - a reason, not a failure: the caller falls back to rosbags
    """The file (or one chunk of it) is outside what this reader handles; the message says what."""


@dataclass(frozen=True)
class Channel:
    """An MCAP channel: its topic, message type (schema name), encoding and raw ``offered_qos_profiles``."""

    id: int
    topic: str
    msgtype: str
    encoding: str
    qos: str | None
    digest: str = ""


@dataclass(frozen=True)
class ChunkIndex:
    start: int
    end: int
    offset: int
    compression: str
    compressed_size: int
    size: int
    channels: frozenset[int]
    """Channels the chunk holds (rosbags' rule: the span up to the next message-index record, less its 15-byte
    head, holds a non-zero number of 16-byte entries, rounded down)."""


def _decompressor(name: str) -> Callable[[bytes], bytes]:
    if name == "zstd":
        if sys.version_info >= (3, 14):
            return importlib.import_module("compression.zstd").decompress  # the standard library's
        from backports import zstd

        return zstd.decompress
    if name == "lz4":
        from lz4.frame import decompress

        return decompress
    raise Unhandled(f"chunk compression {name!r}")


class _Cursor:
    """Bounded reads from a buffer; running past ``end`` is `Unhandled` (a truncated or inconsistent record)."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | mmap.mmap, pos: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, pos, end

    def take(self, n: int) -> int:
        start = self.pos
        if n < 0 or start + n > self.end:
            raise Unhandled(f"record truncated at byte {start}")
        self.pos = start + n
        return start

    def u16(self) -> int:
        return _U16.unpack_from(self.buf, self.take(2))[0]

    def u32(self) -> int:
        return _U32.unpack_from(self.buf, self.take(4))[0]

    def u64(self) -> int:
        return _U64.unpack_from(self.buf, self.take(8))[0]

    def raw(self) -> bytes:
        n = self.u32()
        start = self.take(n)
        return bytes(self.buf[start : start + n])

    def text(self) -> str:
        try:
            return self.raw().decode()
        except UnicodeDecodeError as exc:
            raise Unhandled(f"invalid UTF-8 in a record: {exc}") from None


def _qos_of(metadata: bytes) -> str | None:
    """The ``offered_qos_profiles`` value of a channel's metadata map (None: not there)."""
    cur = _Cursor(metadata, 0, len(metadata))
    while cur.pos < cur.end:
        key, value = cur.text(), cur.text()
        if key == "offered_qos_profiles":
            return value
    return None


class McapFile:
    """An MCAP file opened through its summary: its `channels`, `chunks` and `plan` (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("rb")
        try:
            size = self._file.seek(0, 2)
            if size < len(MAGIC) * 2 + 29:
                raise Unhandled("file too short for an MCAP header and footer")
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.size = size
            self.channels: dict[int, Channel] = {}
            self.chunks: list[ChunkIndex] = []
            self._read_summary(self._header_end())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        m = getattr(self, "_map", None)
        if m is not None:
            m.close()
            self._map = None
        self._file.close()

    def _header_end(self) -> int:
        m = self._map
        if m[:8] != MAGIC or m[8] != 0x01:
            raise Unhandled("no MCAP magic and header record at the start")
        cur = _Cursor(m, 9, self.size)
        length = cur.u64()
        header = _Cursor(m, cur.take(length), cur.pos)
        if header.text() != "ros2":
            raise Unhandled("MCAP profile is not ros2")
        return cur.pos

    def _read_summary(self, data_start: int) -> None:
        m, footer = self._map, self.size - 37
        if m[self.size - 8 :] != MAGIC or m[footer : footer + 9] != _FOOTER_HEAD:
            raise Unhandled("no MCAP footer at the end")
        summary = _U64.unpack_from(m, footer + 9)[0]
        if not summary:
            raise Unhandled("no summary section (unindexed file)")
        if not data_start <= summary <= footer:
            raise Unhandled("summary offset outside the file")
        schemas: dict[int, tuple[str, str]] = {}
        statistics = False
        cur = _Cursor(m, summary, self.size)
        while True:
            op = m[cur.take(1)]
            if op in (0x02, 0x0E):
                break
            length = cur.u64()
            rec = _Cursor(m, cur.take(length), cur.pos)
            if op == 0x03:
                key = rec.u16()
                schemas[key] = (rec.text(), rec.text())
                rec.text()  # the definition: rosbags decodes it too (invalid UTF-8 fails there)
            elif op == 0x04:
                self._channel(rec, schemas)
            elif op == 0x08:
                self.chunks.append(self._chunk_index(rec))
            elif op == 0x0B:
                self._check_statistics(rec)
                statistics = True
        if (statistics and not schemas) or (not statistics and not self.chunks):
            raise Unhandled("summary without schemas or chunk indexes")
        if not self.chunks:
            raise Unhandled("no chunk indexes")

    def _channel(self, rec: _Cursor, schemas: Mapping[int, tuple[str, str]]) -> None:
        key, schema_id = rec.u16(), rec.u16()
        topic, encoding, metadata = rec.text(), rec.text(), rec.raw()
        if key in self.channels:
            raise Unhandled(f"channel {key} defined twice")
        name, schema_encoding = schemas.get(schema_id, ("__schemaless__", ""))
        if schema_encoding not in _SCHEMA_ENCODINGS:
            raise Unhandled(f"schema encoding {schema_encoding!r}")
        self.channels[key] = Channel(key, topic, name, encoding, _qos_of(metadata))

    def _chunk_index(self, rec: _Cursor) -> ChunkIndex:
        start, end, offset, length = _CHUNK_INDEX_HEAD.unpack_from(rec.buf, rec.take(32))
        n = rec.u32()
        if n % 10:
            raise Unhandled("chunk index with a partial message-index entry")
        offsets = dict(struct.iter_unpack("<HQ", rec.buf[rec.take(n) : rec.pos]))
        table = sorted((off, ch) for ch, off in offsets.items())
        index_length = rec.u64()
        compression = rec.text()
        compressed_size, size = rec.u64(), rec.u64()
        stops = [off for off, _ in table[1:]] + [offset + length + index_length]
        channels = frozenset(ch for (off, ch), stop in zip(table, stops, strict=True) if (stop - off - 15) // 16)
        if offset + 49 + len(compression.encode()) + compressed_size > self.size:
            raise Unhandled("chunk beyond the end of the file")
        return ChunkIndex(start, end, offset, compression, compressed_size, size, channels)

    def _check_statistics(self, rec: _Cursor) -> None:
        rec.take(_STATISTICS_HEAD - 4)
        n = rec.u32()
        rec.take(n - n % 10)

    def plan(self, wanted: Mapping[int, object], start: int | None = None,
             stop: int | None = None) -> Iterator[tuple[object, int, bytes]]:
        """``(wanted[channel id], log time, message bytes)`` of the wanted channels (logged in ``[start, stop)``
        when given: only the chunks of that time are read), in rosbags' order. Every chunk read is checked here
        (`Unhandled`), before the returned iterator yields its first message."""
        plan: list[tuple[int, int, int, object, int, int, bytes | None]] = []
        kept = 0
        lo = -(2**63) if start is None else start
        hi = 2**63 - 1 if stop is None else stop - 1
        for chunk in self.chunks:
            if chunk.channels.isdisjoint(wanted) or chunk.end < lo or chunk.start > hi:
                continue
            buf, first, end = self._chunk_records(chunk)
            for pos, channel, log_time, a, b in _message_records(buf, first, end, wanted):
                if max(chunk.start, lo) <= log_time <= min(chunk.end, hi):
                    data = None if buf is self._map else bytes(buf[a:b])
                    kept += 0 if data is None else b - a
                    plan.append((log_time, chunk.offset, pos, wanted[channel], a, b, data))
            if kept > MAX_KEPT_BYTES:
                raise Unhandled(f"more than {MAX_KEPT_BYTES >> 20} MiB of wanted messages in compressed chunks")
        plan.sort(key=lambda item: item[:3])
        return self._yield(plan)

    def _yield(self, plan: list[tuple[int, int, int, object, int, int, bytes | None]]) -> Iterator[Any]:
        m = self._map
        for log_time, _, _, conn, a, b, data in plan:
            yield conn, log_time, data if data is not None else m[a:b]

    def _chunk_records(self, chunk: ChunkIndex) -> tuple[bytes | mmap.mmap, int, int]:
        """The buffer holding a chunk's records and their span in it (the map itself when uncompressed)."""
        m = self._map
        crc = _U32.unpack_from(m, chunk.offset + 33)[0]
        first = chunk.offset + 49 + len(chunk.compression.encode())
        if chunk.compression == "":
            if chunk.compressed_size != chunk.size:
                raise Unhandled("uncompressed chunk whose sizes differ")
            if crc:
                with memoryview(m) as view, view[first : first + chunk.size] as records:
                    if zlib.crc32(records) != crc:
                        raise Unhandled("chunk CRC mismatch")
            return m, first, first + chunk.size
        try:
            raw = _decompressor(chunk.compression)(m[first : first + chunk.compressed_size])
        except Unhandled:
            raise
        except Exception as exc:
            raise Unhandled(f"chunk does not decompress: {exc}") from None
        if len(raw) != chunk.size or (crc and zlib.crc32(raw) != crc):
            raise Unhandled("decompressed chunk size or CRC mismatch")
        return raw, 0, len(raw)


def _message_records(
    buf: bytes | mmap.mmap, pos: int, stop: int, wanted: Mapping[int, object]
) -> Iterator[tuple[int, int, int, int, int]]:
    """``(record position, channel, log time, data start, data end)`` of the wanted message records in
    ``buf[pos:stop]``."""
    head, op_len = _MESSAGE_HEAD.unpack_from, _OP_LEN.unpack_from
    while pos < stop:
        if pos + 9 > stop:
            raise Unhandled(f"record header truncated at byte {pos}")
        op, length = op_len(buf, pos)
        body = pos + 9
        if body + length > stop:
            raise Unhandled(f"record at byte {pos} runs past its chunk")
        if op == 0x05:
            if length < 22:
                raise Unhandled(f"message record at byte {pos} shorter than its header")
            channel, _, log_time, _ = head(buf, body)
            if channel in wanted:
                yield pos, channel, log_time, body + 22, body + length
        pos = body + length
