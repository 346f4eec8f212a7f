"""One sqlite3 storage file of a rosbag2 bag (schema version 4 and later), read with the standard library.

The same query as rosbags' reader (messages of the wanted topics ordered by timestamp) on a read-only, immutable
connection, every row fetched before the first is yielded (at most `MAX_KEPT_BYTES` of them); files of older
schemas, whose topics rosbags might read differently, damaged or larger files are `Unhandled` (the caller then reads
the bag with rosbags).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from perception_safety.io.bag.mcap_file import MAX_KEPT_BYTES, Channel, Unhandled

_FORMATS = frozenset({"ros2msg", "ros2idl"})


class Sqlite3File:
    """A ``.db3`` file: `channels` (the topics table) and `plan` (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        except sqlite3.Error as exc:
            raise Unhandled(f"cannot open database: {exc}") from None
        try:
            self.channels = self._channels()
        except sqlite3.Error as exc:
            self.close()
            raise Unhandled(f"database: {exc}") from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._db.close()

    def _channels(self) -> dict[int, Channel]:
        db = self._db
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"messages", "topics", "schema", "message_definitions"} <= tables:
            raise Unhandled("database tables of a schema before version 4")
        version = db.execute("SELECT schema_version FROM schema").fetchone()
        if version is None or not isinstance(version[0], int) or version[0] < 4:
            raise Unhandled(f"database schema version {version}")
        definitions = db.execute("SELECT topic_type, encoding, encoded_message_definition, type_description_hash "
                                 "FROM message_definitions ORDER BY id").fetchall()  # all read, as rosbags reads them
        if any(row[1] not in _FORMATS for row in definitions):
            raise Unhandled("message definition encoding")
        db.execute("SELECT topics.id, count(messages.id) FROM topics LEFT JOIN messages ON topics.id = "
                   "messages.topic_id GROUP BY topics.id").fetchall()  # the pages rosbags reads at opening
        db.execute("SELECT MIN(timestamp), MAX(timestamp), COUNT(*) FROM messages").fetchall()
        out = {}
        rows = db.execute("SELECT id, name, type, serialization_format, offered_qos_profiles, type_description_hash "
                          "FROM topics ORDER BY id")
        for cid, name, msgtype, fmt, qos, digest in rows:
            if not isinstance(cid, int) or not all(isinstance(v, str) for v in (name, msgtype, fmt, qos, digest)):
                raise Unhandled("topics table entry")
            out[cid] = Channel(cid, name, msgtype, fmt, qos, digest)
        return out

    def plan(self, wanted: Mapping[int, Any], start: int | None = None,
             stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        """``(wanted[topic id], timestamp, message bytes)`` of the wanted topics (logged in ``[start, stop)`` when
        given), in rosbags' order."""
        if not wanted:
            return iter(())
        ids = sorted(wanted)
        window = "" if start is None and stop is None else "AND messages.timestamp BETWEEN ? AND ? "
        bounds = [-(2**63) if start is None else start, 2**63 - 1 if stop is None else stop - 1] if window else []
        query = ("SELECT topics.id, messages.timestamp, messages.data FROM messages JOIN topics ON "
                 f"messages.topic_id = topics.id WHERE topics.id IN ({','.join('?' * len(ids))}) {window}"
                 "ORDER BY timestamp")
        out, kept = [], 0
        try:  # every row fetched here: a damaged file is found before the first message (then rosbags reads it)
            for cid, stamp, data in self._db.execute(query, [*ids, *bounds]):
                if not isinstance(stamp, int) or not isinstance(data, bytes):
                    raise Unhandled("a message row with a timestamp or data of another type")
                kept += len(data)
                if kept > MAX_KEPT_BYTES:
                    raise Unhandled(f"more than {MAX_KEPT_BYTES >> 20} MiB of wanted messages")
                out.append((wanted[cid], stamp, data))
        except sqlite3.Error as exc:
            raise Unhandled(f"database: {exc}") from None
        return iter(out)
