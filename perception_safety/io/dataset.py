"""The JSON Lines detection dataset: one frame per line, for users without bags.

Line format::

    {"frame": "id", "stamp_ns": 0,
     "detections":   [{"box": [x_min, y_min, x_max, y_max], "class": "car", "score": 0.9,
                       "position": [x, y, z]}],
     "ground_truth": [{"box": [...], "class": "car", "distance": 12.3,
                       "position": [x, y, z], "track_id": "7"}]}

``stamp_ns``, ``score``, ``position`` (ego frame, m; a detection's is set by 3D object lists), ``track_id`` and
``episode`` are optional; ``episode`` (a string or integer) names the independent unit the frame belongs to (a
sequence, a drive): frames of one episode are not independent samples, and the cluster-aware intervals and
`evaluate`'s per-episode partials use it; ``distance``
may be omitted when ``position`` is given (it is then the position's norm). An optional ``candidates`` list
(same shape as ``detections``) holds the detector's boxes *below* its score threshold; only PCD reads them
(absent = not recorded). A ground-truth entry with ``"ignore": true`` is an ignore region (KITTI DontCare, COCO
iscrowd; its distance may be omitted): detections inside count neither as true nor as false positives.
A malformed line is an error naming file and line, or, with ``skip_bad``, a counted skip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject, InvalidValueError
from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io import atomic_open


class DatasetError(PerceptionSafetyError):
    """A dataset file is unreadable or has a malformed line."""


@dataclass
class DatasetReadReport:
    """What a read skipped, per file: ``skipped[(path, line)] = reason``."""

    frames: int = 0
    skipped: dict[tuple[str, int], str] = field(default_factory=dict)


def _box(value: Any, what: str) -> Box:
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise InvalidValueError(f"{what}: expected [x_min, y_min, x_max, y_max], got {value!r}")
    try:
        coords = [float(v) for v in value]
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"{what}: {exc}") from exc
    return Box(*coords)


def _number(obj: dict[str, Any], key: str, default: float | None = None) -> float:
    """``obj[key]`` as a float; a missing key (without default), text, bool or null names the key."""
    if key not in obj:
        if default is None:
            raise InvalidValueError(f"missing key {key!r}")
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValueError(f"{key}: expected a number, got {value!r}")
    return float(value)


def _text(obj: dict[str, Any], key: str, required: bool = True) -> str:
    """``obj[key]`` as a string; numbers are accepted as ids, null and containers are not."""
    if key not in obj:
        if required:
            raise InvalidValueError(f"missing key {key!r}")
        return ""
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidValueError(f"{key}: expected a string, got {value!r}")
    return str(value)


def _position(value: Any) -> tuple[float, float, float]:
    if not isinstance(value, list | tuple) or len(value) != 3:
        raise InvalidValueError(f"position: expected [x, y, z], got {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise InvalidValueError(f"position: expected three numbers, got {value!r}")
    return (float(value[0]), float(value[1]), float(value[2]))


def _detections(items: Any, key: str) -> tuple[Detection, ...]:
    dets = []
    for i, d in enumerate(items or []):
        try:
            if not isinstance(d, dict):
                raise InvalidValueError(f"expected an object, got {d!r}")
            if "box" not in d:
                raise InvalidValueError("missing key 'box'")
            box = _box(d["box"], "box")
            pos = _position(d["position"]) if d.get("position") is not None else None
            dets.append(Detection(box, _text(d, "class"), _number(d, "score", 1.0), pos))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidValueError(f"{key}[{i}]: {_describe(exc)}") from exc
    return tuple(dets)


def frame_from_record(record: dict[str, Any], index: int = 0) -> Frame:
    """Build a `Frame` from one decoded JSON line; raises `InvalidValueError` naming the field."""
    if not isinstance(record, dict):
        raise InvalidValueError(f"expected a JSON object, got {type(record).__name__}")
    dets = _detections(record.get("detections", []), "detections")
    candidates = _detections(record["candidates"], "candidates") if record.get("candidates") is not None else None
    gts = []
    for i, g in enumerate(record.get("ground_truth", []) or []):
        try:
            if not isinstance(g, dict):
                raise InvalidValueError(f"expected an object, got {g!r}")
            if "box" not in g:
                raise InvalidValueError("missing key 'box'")
            box = _box(g["box"], "box")
            cls, track = _text(g, "class"), _text(g, "track_id", required=False)
            pos = _position(g["position"]) if g.get("position") is not None else None
            ignore = g.get("ignore", False)
            if not isinstance(ignore, bool):
                raise InvalidValueError(f"ignore: expected true or false, got {ignore!r}")
            if "distance" in g:
                gts.append(GroundTruthObject(box, cls, _number(g, "distance"), pos, track, ignore))
            elif pos is not None:
                gts.append(replace(GroundTruthObject.at_position(box, cls, pos, track), ignore=ignore))
            elif ignore:
                gts.append(GroundTruthObject(box, cls, 0.0, None, track, True))
            else:
                raise InvalidValueError("needs 'distance' or 'position'")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidValueError(f"ground_truth[{i}]: {_describe(exc)}") from exc
    stamp = record.get("stamp_ns", index)
    if isinstance(stamp, bool) or not isinstance(stamp, int):
        raise InvalidValueError(f"stamp_ns: expected an integer, got {stamp!r}")
    return Frame(
        stamp_ns=stamp,
        detections=dets,
        ground_truth=tuple(gts),
        frame_id=str(record.get("frame", index)),
        candidates=candidates,
        episode=_text(record, "episode", required=False),
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return str(exc)


MAX_LINE_BYTES = 64 * 1024 * 1024
"""A dataset line (one frame) longer than this is refused (bounds the memory of a read of /dev/zero and the like)."""


def _line_problem(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start} of the line)"
    return str(exc)


def read_jsonl_frames(
    path: str | Path, skip_bad: bool = False, report: DatasetReadReport | None = None
) -> Iterator[Frame]:
    """Yield the frames of a JSON Lines dataset in file order (blank lines are ignored)."""
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset: {exc.strerror or exc}") from exc
    with fh:
        for lineno, line in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(line) > MAX_LINE_BYTES:
                raise DatasetError(f"{path}:{lineno}: line longer than {MAX_LINE_BYTES} bytes; not a dataset line")
            if not line.strip():
                continue
            try:
                frame = frame_from_record(json.loads(line.decode("utf-8")), lineno - 1)
            except (UnicodeDecodeError, json.JSONDecodeError, InvalidValueError, RecursionError) as exc:
                reason = f"{path}:{lineno}: {_line_problem(exc)}"
                if not skip_bad:
                    raise DatasetError(reason) from exc
                if report is not None:
                    report.skipped[(str(path), lineno)] = str(exc)
                continue
            if report is not None:
                report.frames += 1
            yield frame


DATASET_SUFFIXES = (".jsonl", ".ndjson")


def looks_like_dataset(path: str | Path) -> bool:
    """A ``.jsonl``/``.ndjson`` file whose first record is a frame object (not an episode log's typed record).

    Used when searching folders, which also hold episode logs (``{"type": "begin", ...}``); a file named on the
    command line is read as a dataset without this check (its errors then name the line).
    """
    path = Path(path)
    if path.suffix.lower() not in DATASET_SUFFIXES or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    first = json.loads(line)
                    return isinstance(first, dict) and "type" not in first
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return False


def frame_to_record(frame: Frame) -> dict[str, Any]:
    """The JSON Lines record of a frame (the inverse of `frame_from_record`, images dropped)."""
    out: dict[str, Any] = {"frame": frame.frame_id, "stamp_ns": frame.stamp_ns}
    if frame.episode:
        out["episode"] = frame.episode
    out["detections"] = [_detection_record(d) for d in frame.detections]
    if frame.candidates is not None:
        out["candidates"] = [_detection_record(d) for d in frame.candidates]
    gts = []
    for g in frame.ground_truth:
        rec: dict[str, Any] = {"box": list(g.box.as_tuple()), "class": g.class_id, "distance": g.distance}
        if g.position is not None:
            rec["position"] = list(g.position)
        if g.track_id:
            rec["track_id"] = g.track_id
        if g.ignore:
            rec["ignore"] = True
        gts.append(rec)
    out["ground_truth"] = gts
    return out


def _detection_record(d: Detection) -> dict[str, Any]:
    rec: dict[str, Any] = {"box": list(d.box.as_tuple()), "class": d.class_id, "score": d.score}
    if d.position is not None:
        rec["position"] = list(d.position)
    return rec


def write_jsonl_frames(path: str | Path, frames: Iterable[Frame]) -> int:
    """Write frames as a JSON Lines dataset; returns the number written."""
    n = 0
    with atomic_open(path, "w", encoding="utf-8") as fh:
        for frame in frames:
            fh.write(json.dumps(frame_to_record(frame)) + "\n")
            n += 1
    return n
