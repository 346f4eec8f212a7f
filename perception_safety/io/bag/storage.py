"""Opening a rosbag2 bag for reading: our own reader where it is sure to yield what rosbags' Reader yields, else
rosbags' Reader, with the reason recorded (`OpenBag.note`).

Ours reads metadata.yaml with libyaml (`bag_metadata_document`: cached per file version, shared with
`io.bag_inputs` in the process, the last 256 files),
MCAP files through their summary section (`mcap_file`) and sqlite3 files with the standard library
(`sqlite_file`), and yields ``(connection, log time, CDR bytes)`` in rosbags' order with rosbags' connection ids
(metadata.yaml's topic list, numbered from 1). A metadata.yaml or storage file it does not handle (older bag
versions, compressed files or messages, unindexed MCAP, other storage plugins, inconsistent records) goes to
rosbags, whose result and errors are then the reader's.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any

from perception_safety.io.bag.mcap_file import McapFile, Unhandled
from perception_safety.io.config import parse_yaml_document
from perception_safety.safe_io.bounded_read import read_text

LOG = logging.getLogger(__name__)
MAX_METADATA_BYTES = 64 * 1024 * 1024
"""A bag's metadata.yaml larger than this is refused (real ones are kilobytes)."""


@dataclass(frozen=True)
class BagConnection:
    """One topic of a bag as metadata.yaml lists it (``id`` as rosbags numbers it: position from 1)."""

    id: int
    topic: str
    msgtype: str
    serialization_format: str = "cdr"
    qos: tuple[Any, ...] = field(default=(), compare=False)
    digest: str = ""


def bag_metadata_document(path: Path, error: type[Exception]) -> Any:
    """The parsed metadata.yaml of bag ``path`` (bounded libyaml loader), parsed once per file version whoever asks
    (`io.bag_inputs` and the reader); ``error`` for an unreadable or invalid file. Shared: do not modify it."""
    meta = path / "metadata.yaml"
    try:
        st = meta.stat()
    except OSError:
        key = None  # not cached: reading it names the problem
    else:
        key = (str(meta), st.st_mtime_ns, st.st_size, st.st_ino)
    try:
        return _parsed(*key) if key is not None else _parse(str(meta))
    except _MetadataError as exc:
        raise error(str(exc)) from exc.__cause__


class _MetadataError(Exception):
    """Why a metadata.yaml cannot be read (raised again as the caller's error type)."""


def _parse(meta: str) -> Any:
    text = read_text(Path(meta), MAX_METADATA_BYTES, "bag metadata", _MetadataError)
    return parse_yaml_document(text, meta, _MetadataError)


@lru_cache(maxsize=256)
def _parsed(meta: str, _mtime: int, _size: int, _inode: int) -> Any:
    return _parse(meta)


class OpenBag:
    """A bag open for reading: `connections` and `messages` as rosbags' Reader has them; ``note`` says which
    reader reads it ("" ours, else why rosbags' does)."""

    connections: list[Any]
    note: str = ""

    def messages(self, connections: Collection[Any], start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        """The wanted connections' messages (logged in ``[start, stop)`` when given: `io.frame_seek`)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> OpenBag:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RosbagsBag(OpenBag):
    """rosbags' Reader behind the `OpenBag` interface."""

    def __init__(self, path: Path, note: str) -> None:
        from rosbags.rosbag2 import Reader

        self.note = note
        self._reader = Reader(path)
        self._reader.open()
        self.connections = list(self._reader.connections)

    def messages(self, connections: Collection[Any], start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        return self._reader.messages(connections=connections, start=start, stop=stop)

    def close(self) -> None:
        self._reader.close()


class FastBag(OpenBag):
    """Our reader: metadata.yaml's connections, each storage file's messages in turn (as rosbags reads them)."""

    def __init__(self, path: Path, meta: Mapping[str, Any]) -> None:
        self.path = path
        self.connections = _connections(meta)
        files = [path / PurePath(name).name for name in meta["relative_file_paths"]]
        if not all(f.exists() for f in files):
            raise Unhandled("a storage file is missing")
        self._storages: list[Any] = []
        self._fallback: RosbagsBag | None = None
        try:
            for f in files:
                self._storages.append(_open_storage(f, meta["storage_identifier"]))
        except BaseException:
            self.close()
            raise

    def messages(self, connections: Collection[Any], start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        mine = {c.id: c for c in self.connections}
        wanted = [mine[c.id] for c in connections if c.id in mine]
        if self._fallback is None:
            try:  # every check of every file before the first message: a fallback never starts half-way
                plans = [s.plan(_channel_map(s.channels.values(), wanted), start, stop) for s in self._storages]
            except Exception as exc:  # Unhandled, or a surprise: rosbags' reading (and its errors) is the reference
                self.note = f"{self.path}: read with rosbags: {_reason(exc)}"
                LOG.debug(self.note)
                self._fallback = RosbagsBag(self.path, self.note)
            else:
                for plan in plans:
                    yield from plan
                return
        ids = {c.id for c in wanted}
        for conn, stamp, raw in self._fallback.messages([c for c in self._fallback.connections if c.id in ids], start,
                                                        stop):
            yield mine[conn.id], stamp, raw

    def close(self) -> None:
        for storage in self._storages:
            storage.close()
        self._storages = []
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None


def _open_storage(path: Path, storage_id: str) -> Any:
    if storage_id == "mcap":
        return McapFile(path)
    from perception_safety.io.bag.sqlite_file import Sqlite3File

    return Sqlite3File(path)


def _qos(value: Any) -> tuple[Any, ...]:
    """QoS profiles as plain data (a YAML string parsed); `Unhandled` for what rosbags might read otherwise."""
    if not value or value == "[]":
        return ()
    if isinstance(value, str):
        return _qos_text(value)
    return _qos_list(value)


@lru_cache(maxsize=64)
def _qos_text(value: str) -> tuple[Any, ...]:
    return _qos_list(parse_yaml_document(value, "offered_qos_profiles", Unhandled))


def _qos_list(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise Unhandled("offered_qos_profiles is not a list of mappings")
    return tuple(value)


def _channel_map(channels: Collection[Any], wanted: Sequence[BagConnection]) -> dict[int, BagConnection]:
    """Storage channel id -> the first wanted connection it matches (topic, type, encoding, QoS, type hash)."""
    out = {}
    for ch in channels:
        for conn in wanted:
            if conn.topic != ch.topic or conn.msgtype != ch.msgtype or conn.serialization_format != ch.encoding:
                continue
            if ch.digest and conn.digest and ch.digest != conn.digest:
                continue
            theirs = _qos(ch.qos)
            if theirs != conn.qos:
                if len(theirs) == len(conn.qos):
                    raise Unhandled(f"topic {ch.topic}: QoS profiles differ from metadata.yaml only in detail")
                continue
            out[ch.id] = conn
            break
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _connections(meta: Mapping[str, Any]) -> list[BagConnection]:
    """metadata.yaml's topics as connections; `Unhandled` for anything rosbags might read differently."""
    version, storage = meta.get("version"), meta.get("storage_identifier")
    if not _is_int(version) or not 4 <= version <= 9:
        raise Unhandled(f"bag version {version!r}")
    if storage not in ("mcap", "sqlite3"):
        raise Unhandled(f"storage plugin {storage!r}")
    mode = meta.get("compression_mode", "")
    if not isinstance(mode, str) or mode.lower() not in ("", "none"):
        raise Unhandled(f"compression mode {mode!r}")
    paths, files = meta.get("relative_file_paths"), meta.get("files", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) or not isinstance(files, list):
        raise Unhandled("file list")
    duration, start = meta.get("duration"), meta.get("starting_time")
    if not (isinstance(duration, dict) and _is_int(duration.get("nanoseconds")) and isinstance(start, dict)
            and _is_int(start.get("nanoseconds_since_epoch")) and _is_int(meta.get("message_count"))):
        raise Unhandled("duration, starting time or message count")
    topics = meta.get("topics_with_message_count")
    if not isinstance(topics, list):
        raise Unhandled("topic list")
    out = []
    for index, entry in enumerate(topics, start=1):
        tm = entry.get("topic_metadata") if isinstance(entry, dict) else None
        if not isinstance(tm, dict) or "message_count" not in entry:
            raise Unhandled(f"topic #{index}")
        name, msgtype, fmt = tm.get("name"), tm.get("type"), tm.get("serialization_format")
        digest = tm.get("type_description_hash", "")
        if not all(isinstance(v, str) for v in (name, msgtype, fmt, digest)) or fmt != "cdr":
            raise Unhandled(f"topic #{index}: name, type or serialization format")
        out.append(BagConnection(index, name, msgtype, fmt, _qos(tm.get("offered_qos_profiles", [])), digest))
    return out


def open_bag(path: str | Path) -> OpenBag:
    """The bag at ``path`` open for reading (our reader, else rosbags'); raises what rosbags' Reader raises for a
    bag neither can open."""
    path = Path(path)
    try:
        document = bag_metadata_document(path, Unhandled) if path.is_dir() else None
        meta = document.get("rosbag2_bagfile_information") if isinstance(document, dict) else None
        if not isinstance(meta, dict):
            raise Unhandled("no rosbag2_bagfile_information in metadata.yaml")
        return FastBag(path, meta)
    except Exception as exc:  # Unhandled, or a surprise: rosbags' reading (and its errors) is the reference
        note = f"{path}: read with rosbags: {_reason(exc)}"
    LOG.debug(note)
    return RosbagsBag(path, note)


def _reason(exc: Exception) -> str:
    """Why our reader handed a bag to rosbags (an unexpected error named by its type)."""
    return str(exc) if isinstance(exc, Unhandled) else f"{type(exc).__name__}: {exc}"
