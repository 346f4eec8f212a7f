"""Reading rosbag2 bags (sqlite3 or mcap) into `Frame`s, with rosbags (no ROS install needed).

Frames are assembled around an *anchor* topic (detections by default): every valid anchor
message is one frame; the other topics' messages join it by header stamp, exactly or, with a
tolerance, the nearest one within it. Bad messages (NaN or inverted boxes, wrong image
encoding or size, undecodable bytes) are skipped and reported with bag, topic and message index;
messages that join no frame are counted per topic.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.core.types import Frame, InvalidValueError, make_frame
from perception_safety.io import bag_messages as bm
from perception_safety.io import objects3d as o3
from perception_safety.io.bag.decode import alarm_reader, reader_of
from perception_safety.io.bag.layout import COMPRESSED_SUFFIX, TOPIC_TYPES, BagError, BagTopics, find_bags
from perception_safety.io.bag.storage import OpenBag, open_bag
from perception_safety.io.typestore import ros2_typestore
from perception_safety.monitors.base import MonitorResult

_DECODE = {
    "camera_info": bm.camera_info_reading,
    "detections": bm.detections_from_msg,
    "candidates": bm.detections_from_msg,
    "ground_truth": bm.ground_truth_from_msg,
    "ego": bm.ego_from_msg,
}
_IMAGE_DECODE = {bm.IMAGE_TYPE: bm.image_from_msg, bm.COMPRESSED_IMAGE_TYPE: bm.compressed_image_from_msg}
_DECODE_3D = {  # 3D object lists on the detections/ground-truth topics (io/objects3d.py)
    ("detections", o3.DETECTIONS_3D_TYPE): o3.detections_from_3d_msg,
    ("candidates", o3.DETECTIONS_3D_TYPE): o3.detections_from_3d_msg,
    ("detections", o3.AUTOWARE_OBJECTS_TYPE): o3.detections_from_autoware,
    ("candidates", o3.AUTOWARE_OBJECTS_TYPE): o3.detections_from_autoware,
    ("ground_truth", o3.DETECTIONS_3D_TYPE): o3.ground_truth_from_3d_msg,
}


@dataclass(frozen=True)
class SkippedMessage:
    """One message left out of the frames, and why."""

    bag: str
    topic: str
    index: int
    reason: str

    def __str__(self) -> str:
        return f"{self.bag}: {self.topic} message #{self.index}: {self.reason}"


@dataclass
class BagReadReport:
    """What reading one or more bags produced and left out."""

    frames: int = 0
    skipped: list[SkippedMessage] = field(default_factory=list)
    unmatched: dict[tuple[str, str], int] = field(default_factory=dict)
    missing_topics: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """How bags were read where it was not our own reader (`storage.OpenBag.note`: rosbags' Reader, and why)."""

    def summary_lines(self) -> list[str]:
        """Human-readable lines: skips per bag and topic, unmatched counts, missing topics."""
        lines = [f"{self.frames} frame(s) assembled"]
        counts: dict[tuple[str, str], int] = {}
        for s in self.skipped:
            counts[(s.bag, s.topic)] = counts.get((s.bag, s.topic), 0) + 1
        lines += [f"{bag}: {topic}: {n} malformed message(s) skipped" for (bag, topic), n in sorted(counts.items())]
        lines += [
            f"{bag}: {topic}: {n} message(s) matched no frame" for (bag, topic), n in sorted(self.unmatched.items())
        ]
        lines += [f"{bag}: topic {topic} not in the bag" for bag, topic in self.missing_topics]
        return lines


@dataclass
class StatusRecords:
    """The monitor's results read in the same pass as the frames (`read_frames` ``statuses``): ``(stamp_ns,
    results)`` per message in bag order, or why there are none (topic absent, a message unreadable)."""

    items: list[tuple[int, tuple[MonitorResult, ...]]] = field(default_factory=list)
    missing: str = ""
    alarm_of: str | None = None
    """When given, only the alarm of the status of this name is read (all a verdict needs): ``alarms`` gets
    ``(stamp_ns, alarm or None)`` per message (`decode.alarm_reader`) and ``items`` stays empty."""
    alarms: list[tuple[int, bool | None]] = field(default_factory=list)


def open_readable(path: str | Path) -> OpenBag:
    """`storage.open_bag`, a bag that cannot be opened a `BagError` naming it (rosbags raises several types for
    damaged bags)."""
    try:
        return open_bag(Path(path))
    except Exception as exc:
        raise BagError(f"{path}: cannot open bag: {exc}") from exc


def read_monitor_results(
    path: str | Path, topics: BagTopics | None = None
) -> list[tuple[int, tuple[MonitorResult, ...]]]:
    """``(stamp_ns, results)`` of every message on ``topics.monitor_results``, in bag order."""
    topics = topics or BagTopics()
    path = Path(path)
    store = ros2_typestore()
    reader = open_readable(path)
    try:
        conns = [c for c in reader.connections if c.topic == topics.monitor_results]
        if not conns:
            raise BagError(f"{path}: topic {topics.monitor_results} not in the bag")
        read = {c.id: reader_of("monitor_results", c.msgtype, store, bm.monitor_results_from_msg) for c in conns}
        out = []
        for index, (conn, _, raw) in enumerate(reader.messages(conns)):
            try:
                out.append(read[conn.id](raw))
            except Exception as exc:
                raise BagError(f"{path}: {conn.topic} message #{index}: {exc}") from exc
        return out
    finally:
        reader.close()


def _raw_stamp(raw: bytes | memoryview) -> int:
    """Header stamp straight from CDR bytes (header is the first field), without deserializing."""
    endian = "<" if raw[1] == 1 else ">"
    sec, nanosec = struct.unpack_from(f"{endian}iI", raw, 4)
    return sec * 1_000_000_000 + nanosec


def _nearest(anchors: np.ndarray, stamps: np.ndarray, tolerance_ns: int) -> np.ndarray:
    """For each anchor stamp, the index of the nearest stamp within tolerance, or -1."""
    out = np.full(len(anchors), -1, dtype=np.int64)
    if len(stamps) == 0 or len(anchors) == 0:
        return out
    order = np.argsort(stamps, kind="stable")
    s = stamps[order]
    pos = np.searchsorted(s, anchors)
    left = np.clip(pos - 1, 0, len(s) - 1)
    right = np.clip(pos, 0, len(s) - 1)
    pick = np.where(np.abs(s[left] - anchors) <= np.abs(s[right] - anchors), left, right)
    ok = np.abs(s[pick] - anchors) <= tolerance_ns
    out[ok] = order[pick[ok]]
    return out


def read_frames(
    path: str | Path,
    topics: BagTopics | None = None,
    tolerance_ns: int = 0,
    with_images: bool = True,
    report: BagReadReport | None = None,
    statuses: StatusRecords | None = None,
    windows: dict[int, tuple[int, int]] | None = None,
) -> Iterator[Frame]:
    """Yield the frames of one bag in anchor-stamp order (see the module docstring).

    With ``statuses`` the monitor results (``topics.monitor_results``) are read in the same pass over the file and
    collected there (as `read_monitor_results` returns them), so verdicts cost no second read of the bag.
    With ``windows`` each frame's recording window is collected there: anchor stamp -> (first, last) log time of
    the messages joined into the frame, so the frame can be read back by seeking (`io.frame_seek`).
    """
    topics = topics or BagTopics()
    report = report if report is not None else BagReadReport()
    path = Path(path)
    bag = str(path)
    reader = open_readable(path)
    try:
        yield from _read_open(reader, bag, topics, tolerance_ns, with_images, report, statuses, windows)
    finally:
        if reader.note:
            report.notes.append(reader.note)
        reader.close()


def _connections(
    reader: OpenBag, bag: str, topics: BagTopics, with_images: bool, report: BagReadReport
) -> dict[str, Any]:
    by_topic = {c.topic: c for c in reader.connections}
    conns: dict[str, Any] = {}
    for role in ("image", "camera_info", "detections", "candidates", "ground_truth", "ego"):
        name = getattr(topics, role)
        images_off = not with_images and topics.anchor != "image"
        if not name or (role in ("image", "camera_info") and images_off):
            continue
        conn = by_topic.get(name)
        if conn is None and role == "image":  # image_transport's compressed topic
            conn = by_topic.get(name + COMPRESSED_SUFFIX)
            name = conn.topic if conn is not None else name
        if conn is None and role == "candidates":
            continue  # optional: frames then carry candidates=None (not recorded)
        if conn is None:
            if role == topics.anchor:
                available = ", ".join(f"{t} ({c.msgtype})" for t, c in sorted(by_topic.items())) or "none"
                raise BagError(f"{bag}: anchor topic {name} ({role}) not in the bag; topics present: {available}")
            if role != "camera_info":  # optional: checks the image size when recorded
                report.missing_topics.append((bag, name))
            continue
        expected = (
            tuple(_IMAGE_DECODE)
            if role == "image"
            else (TOPIC_TYPES[role], *(t for r, t in _DECODE_3D if r == role))
        )
        if conn.msgtype not in expected:
            raise BagError(f"{bag}: topic {name} has type {conn.msgtype}, expected {' or '.join(expected)} for {role}")
        conns[role] = conn
    return conns


def _decode_topics(
    reader: OpenBag, bag: str, conns: dict[str, Any], report: BagReadReport, statuses: StatusRecords | None = None,
    logs: dict[str, list[int]] | None = None,
) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """Decode every non-image topic in one pass over the bag (one read of the file, whatever its size); the monitor
    results (connection ``conns["monitor_results"]``) go to ``statuses`` (one bad message drops them all, with the
    reason, as `read_monitor_results` fails); ``logs`` gets each kept message's log time, per role."""
    store = ros2_typestore()
    roles = {conn.id: role for role, conn in conns.items() if role not in ("image", "monitor_results")}
    stamps: dict[str, list[int]] = {role: [] for role in roles.values()}
    values: dict[str, list[Any]] = {role: [] for role in roles.values()}
    counts = dict.fromkeys(roles.values(), 0)
    wanted = [conns[role] for role in roles.values()]
    readers = {cid: reader_of(role, conns[role].msgtype, store, _DECODE_3D.get((role, conns[role].msgtype),
                                                                            _DECODE[role]))
               for cid, role in roles.items()}  # fmt: skip
    log_of = {role: logs.setdefault(role, []) for role in roles.values()} if logs is not None else None
    status_conn = conns.get("monitor_results")
    if status_conn is not None:
        wanted.append(status_conn)
    if not wanted:
        return {}
    status_index = 0
    read_status, status_out = None, None
    if status_conn is not None and statuses is not None:  # the verdict pass: the alarm only, else every result
        read_status, status_out = ((alarm_reader(status_conn.msgtype, store, statuses.alarm_of), statuses.alarms)
                                   if statuses.alarm_of is not None else
                                   (reader_of("monitor_results", status_conn.msgtype, store,
                                              bm.monitor_results_from_msg), statuses.items))
    try:
        for conn, log_ns, raw in reader.messages(wanted):
            if conn is status_conn or (status_conn is not None and conn.id == status_conn.id):
                if read_status is not None and not statuses.missing:
                    try:
                        status_out.append(read_status(raw))
                    except Exception as exc:
                        statuses.items.clear()
                        statuses.alarms.clear()
                        statuses.missing = f"{bag}: {conn.topic} message #{status_index}: {exc}"
                status_index += 1
                continue
            role = roles[conn.id]
            index = counts[role]
            counts[role] += 1
            try:
                stamp, value = readers[conn.id](raw)
            except InvalidValueError as exc:
                report.skipped.append(SkippedMessage(bag, conn.topic, index, str(exc)))
                continue
            except Exception as exc:  # undecodable CDR bytes
                report.skipped.append(SkippedMessage(bag, conn.topic, index, f"cannot deserialize: {exc}"))
                continue
            stamps[role].append(stamp)
            values[role].append(value)
            if log_of is not None:
                log_of[role].append(log_ns)
    except Exception as exc:
        topics = ", ".join(c.topic for c in wanted)
        raise BagError(f"{bag}: {topics}: bag data unreadable (truncated or corrupt?): {exc}") from exc
    return {role: (np.asarray(stamps[role], dtype=np.int64), values[role]) for role in stamps}


def _image_stamps(reader: OpenBag, bag: str, conn: Any, report: BagReadReport, logs: list[int] | None = None
                  ) -> np.ndarray:
    stamps = []
    try:
        for index, (_, log_ns, raw) in enumerate(reader.messages([conn])):
            if logs is not None:
                logs.append(log_ns)
            try:
                stamps.append(_raw_stamp(raw))
            except (struct.error, IndexError):
                report.skipped.append(SkippedMessage(bag, conn.topic, index, "message too short for a header"))
                stamps.append(-(2**62))
    except Exception as exc:
        raise BagError(f"{bag}: {conn.topic}: bag data unreadable (truncated or corrupt?): {exc}") from exc
    return np.asarray(stamps, dtype=np.int64)


def _read_open(
    reader: OpenBag,
    bag: str,
    topics: BagTopics,
    tolerance_ns: int,
    with_images: bool,
    report: BagReadReport,
    statuses: StatusRecords | None = None,
    windows: dict[int, tuple[int, int]] | None = None,
) -> Iterator[Frame]:
    conns = _connections(reader, bag, topics, with_images, report)
    if statuses is not None:
        status_conn = next((c for c in reader.connections if c.topic == topics.monitor_results), None)
        if status_conn is None or not topics.monitor_results:
            statuses.missing = f"{bag}: topic {topics.monitor_results} not in the bag"
        else:
            conns["monitor_results"] = status_conn
    logs: dict[str, list[int]] | None = {} if windows is not None else None
    decoded = _decode_topics(reader, bag, conns, report, statuses, logs)
    image_logs = logs.setdefault("image", []) if logs is not None else None
    image_stamps = _image_stamps(reader, bag, conns["image"], report, image_logs) if "image" in conns else None

    if topics.anchor == "image":
        anchor_stamps = image_stamps if image_stamps is not None else np.zeros(0, np.int64)
    else:
        anchor_stamps = decoded[topics.anchor][0]
    frame_order = np.argsort(anchor_stamps, kind="stable")
    anchors = anchor_stamps[frame_order]

    joined: dict[str, np.ndarray] = {}
    for role, (stamps, _) in decoded.items():
        joined[role] = frame_order if role == topics.anchor else _nearest(anchors, stamps, tolerance_ns)
    if image_stamps is not None:
        joined["image"] = frame_order if topics.anchor == "image" else _nearest(anchors, image_stamps, tolerance_ns)
    for role, idx in joined.items():
        total = len(image_stamps) if role == "image" else len(decoded[role][0])
        unused = total - len(np.unique(idx[idx >= 0]))
        if unused:
            key = (bag, getattr(topics, role))
            report.unmatched[key] = report.unmatched.get(key, 0) + unused

    spans = _log_spans(joined, logs, len(anchors)) if logs is not None else None
    first_log, last_log = (spans[0].tolist(), spans[1].tolist()) if spans is not None else ([], [])
    images = _iter_images(reader, bag, conns.get("image"), joined.get("image"), report) if with_images else None
    label = _bag_label(Path(bag))
    picks = [(role, idx.tolist(), decoded[role][1]) for role, idx in joined.items() if role != "image"]
    for i, stamp in enumerate(anchors.tolist()):  # Python ints and lists: no numpy scalar per frame and role
        parts: dict[str, Any] = {}
        for role, idx, values in picks:
            if idx[i] >= 0:
                parts[role] = values[idx[i]]
        image = next(images) if images is not None else None
        if image is not None and "camera_info" in parts:
            try:
                bm.check_image_size(image, parts["camera_info"][0])
            except InvalidValueError as exc:
                report.skipped.append(SkippedMessage(bag, conns["image"].topic, int(joined["image"][i]), str(exc)))
                image = None
        if topics.anchor == "image" and with_images and image is None:
            continue  # the anchor image itself was malformed: already reported
        report.frames += 1
        if windows is not None and spans is not None:
            windows[stamp] = (first_log[i], last_log[i])
        yield make_frame(
            stamp_ns=stamp,
            detections=parts.get("detections", ()),
            ground_truth=parts.get("ground_truth", ()),
            ego=parts.get("ego"),
            image=image,
            frame_id=f"{label}:{stamp}",
            candidates=parts.get("candidates"),
            camera=parts["camera_info"][1] if "camera_info" in parts else None,
        )


def _log_spans(joined: dict[str, np.ndarray], logs: dict[str, list[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, the first and last log time of the messages joined into it (``joined``: role -> message index)."""
    lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    for role, idx in joined.items():
        ok = idx >= 0
        t = np.asarray(logs.get(role, ()), dtype=np.int64)[idx[ok]]
        lo[ok] = np.minimum(lo[ok], t)
        hi[ok] = np.maximum(hi[ok], t)
    return lo, hi


def _bag_label(path: Path) -> str:
    """A short name of a bag for frame ids: parent folder and bag folder (recorders write several bags
    with the same name, e.g. ``<episode>/perception``)."""
    parent = path.resolve().parent.name
    return f"{parent}/{path.name}" if parent else path.name


def _iter_images(
    reader: OpenBag, bag: str, conn: Any, wanted: np.ndarray | None, report: BagReadReport
) -> Iterator[np.ndarray | None]:
    """One image (or None) per frame, in frame order, streaming through the image topic once."""
    if conn is None or wanted is None:
        while True:
            yield None
    store = ros2_typestore()
    needed: dict[int, int] = {}
    for k in wanted[wanted >= 0]:
        needed[int(k)] = needed.get(int(k), 0) + 1
    cache: dict[int, np.ndarray | None] = {}
    stream = enumerate(reader.messages([conn]))
    for k in wanted:
        k = int(k)
        if k < 0:
            yield None
            continue
        while k not in cache:
            try:
                index, (_, _, raw) = next(stream)
            except StopIteration:
                cache[k] = None
                break
            except Exception as exc:
                raise BagError(f"{bag}: {conn.topic}: bag data unreadable (truncated or corrupt?): {exc}") from exc
            if index in needed:
                try:
                    msg = store.deserialize_cdr(memoryview(raw), conn.msgtype)
                    cache[index] = _IMAGE_DECODE[conn.msgtype](msg)
                except InvalidValueError as exc:
                    report.skipped.append(SkippedMessage(bag, conn.topic, index, str(exc)))
                    cache[index] = None
                except Exception as exc:
                    report.skipped.append(SkippedMessage(bag, conn.topic, index, f"cannot deserialize: {exc}"))
                    cache[index] = None
        needed[k] -= 1
        yield cache[k] if needed[k] > 0 else cache.pop(k)


def read_bags(
    inputs: Iterable[str | Path],
    topics: BagTopics | None = None,
    tolerance_ns: int = 0,
    with_images: bool = True,
    report: BagReadReport | None = None,
) -> Iterator[Frame]:
    """Frames of every bag found in ``inputs`` (see `find_bags`), bag after bag."""
    for bag in find_bags(inputs):
        yield from read_frames(bag, topics, tolerance_ns, with_images, report)
