"""A nuScenes-format data set (its public JSON tables) and a detection results file to `Frame`s.

Tables read from ``TABLE_DIR`` (e.g. ``v1.0-mini/``): ``scene``, ``sample``, ``sample_data``, ``sensor``,
``calibrated_sensor``, ``ego_pose``, ``sample_annotation``, ``instance``, ``category``. One frame per sample
(key frame), its ego pose that of the sample's ``LIDAR_TOP`` key-frame record (as the nuScenes evaluation uses).
Results: the nuScenes submission format ``{"meta": ..., "results": {sample_token: [{translation, size, rotation,
detection_name, detection_score, ...}]}}``.

Every box is moved into the ego frame (x forward, y left, z up) with the ego pose's rotation (quaternion w, x,
y, z); an object's distance is its ground-plane distance ``hypot(x, y)`` (the benchmark's ``ego_dist``). Categories
become the benchmark's detection classes (``human.pedestrian.adult`` -> ``pedestrian``; categories the
benchmark does not evaluate are skipped and counted); annotations with no lidar and no radar point are skipped
and counted, as the benchmark does. The episode of a frame is its scene's name, the track its instance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.core.types import Detection, Frame, GroundTruthObject, InvalidValueError
from perception_safety.io.converters.common import ConversionError, ConversionReport, class_name
from perception_safety.io.objects3d import footprint

TABLES = ("scene", "sample", "sample_data", "sensor", "calibrated_sensor", "ego_pose", "sample_annotation",
          "instance", "category")

DETECTION_CLASSES = {
    "movable_object.barrier": "barrier",
    "vehicle.bicycle": "bicycle",
    "vehicle.bus.bendy": "bus",
    "vehicle.bus.rigid": "bus",
    "vehicle.car": "car",
    "vehicle.construction": "construction_vehicle",
    "vehicle.motorcycle": "motorcycle",
    "human.pedestrian.adult": "pedestrian",
    "human.pedestrian.child": "pedestrian",
    "human.pedestrian.construction_worker": "pedestrian",
    "human.pedestrian.police_officer": "pedestrian",
    "movable_object.trafficcone": "traffic_cone",
    "vehicle.trailer": "trailer",
    "vehicle.truck": "truck",
}
"""nuScenes category -> detection class of the nuScenes detection benchmark (published table)."""


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversionError(f"{path}: table missing (a nuScenes table folder holds {', '.join(TABLES)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversionError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConversionError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ConversionError(f"{path}: JSON nested too deeply") from None


STRING_FIELDS = {
    "scene": ("name",), "sample": ("scene_token",), "sensor": ("channel",), "calibrated_sensor": ("sensor_token",),
    "sample_data": ("sample_token", "ego_pose_token", "calibrated_sensor_token"),
    "sample_annotation": ("sample_token", "instance_token"), "instance": ("category_token",), "category": ("name",),
}
"""Per table, the fields used as keys or names: strings wherever present (the public schema's tokens)."""


def _table(folder: Path, name: str) -> dict[str, dict[str, Any]]:
    path = folder / f"{name}.json"
    rows = _load(path)
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "token" in r for r in rows):
        raise ConversionError(f"{path}: expected a list of records with a 'token'")
    for i, r in enumerate(rows):
        for key in ("token", *STRING_FIELDS.get(name, ())):
            if key in r and not isinstance(r[key], str):
                raise ConversionError(f"{path}: record {i} ('token' {str(r['token'])[:40]}): {key!r}: expected a "
                                      f"string, got {str(r[key])[:60]}")
    return {r["token"]: r for r in rows}


def _count(record: dict[str, Any], key: str, default: int, where: str) -> int:
    value = record.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConversionError(f"{where}: {key!r}: expected a count (an integer >= 0), got {value!r}")
    return value


def _vector(record: dict[str, Any], key: str, n: int, where: str) -> np.ndarray:
    value = record.get(key)
    if not isinstance(value, list) or len(value) != n or any(isinstance(v, bool) for v in value):
        raise ConversionError(f"{where}: '{key}': expected {n} numbers, got {str(value)[:80]}")
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConversionError(f"{where}: '{key}': expected {n} numbers, got {str(value)[:80]}") from None
    if not np.all(np.isfinite(out)):
        raise ConversionError(f"{where}: '{key}': non-finite value {value}")
    return out


def rotation_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``(w, x, y, z)`` (normalised first)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


class _EgoFrame:
    """The global -> ego transform of one ego pose."""

    def __init__(self, pose: dict[str, Any], where: str) -> None:
        self.t = _vector(pose, "translation", 3, where)
        q = _vector(pose, "rotation", 4, where)
        if not np.linalg.norm(q) > 0:
            raise ConversionError(f"{where}: 'rotation': zero quaternion")
        self.r_inv = rotation_matrix(q).T

    def position(self, translation: np.ndarray) -> tuple[float, float, float]:
        p = self.r_inv @ (translation - self.t)
        return (float(p[0]), float(p[1]), float(p[2]))


def _lidar_poses(tables: dict[str, dict[str, dict[str, Any]]]) -> dict[str, str]:
    """sample token -> ego_pose token of its LIDAR_TOP key-frame sample_data."""
    sensors = {t: r.get("channel") for t, r in tables["sensor"].items()}
    calib = {t: sensors.get(r.get("sensor_token")) for t, r in tables["calibrated_sensor"].items()}
    out = {}
    for sd in tables["sample_data"].values():
        if sd.get("is_key_frame") and calib.get(sd.get("calibrated_sensor_token")) == "LIDAR_TOP":
            out[sd.get("sample_token")] = sd.get("ego_pose_token")
    return out


def _object(record: dict[str, Any], ego: _EgoFrame, where: str) -> tuple[tuple[float, float, float], Any]:
    pos = ego.position(_vector(record, "translation", 3, where))
    w, length, _ = _vector(record, "size", 3, where)  # nuScenes size is (width, length, height)
    try:
        return pos, footprint(pos, float(length), float(w), where)
    except InvalidValueError as exc:
        raise ConversionError(str(exc)) from None


def convert_nuscenes(
    table_dir: str | Path,
    results: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    keep_empty: bool = False,
    report: ConversionReport | None = None,
) -> Iterator[Frame]:
    """One frame per sample in scene order, then timestamp, with ground truth and the results' boxes; the frame's
    episode is its scene's name."""
    folder, mapping = Path(table_dir), mapping or {}
    report = report if report is not None else ConversionReport()
    tables = {name: _table(folder, name) for name in TABLES}
    preds = _results(Path(results)) if results is not None else {}
    poses = _lidar_poses(tables)
    categories = {t: r.get("name", "") for t, r in tables["category"].items()}
    instance_cat = {t: categories.get(r.get("category_token"), "") for t, r in tables["instance"].items()}
    anns: dict[str, list[dict[str, Any]]] = {}
    for ann in tables["sample_annotation"].values():
        anns.setdefault(ann.get("sample_token"), []).append(ann)
    scenes = {t: r.get("name") or t for t, r in tables["scene"].items()}
    for token, sample in tables["sample"].items():
        stamp = sample.get("timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, int):
            raise ConversionError(f"{folder / 'sample.json'}: sample {token}: 'timestamp': expected microseconds "
                                  f"(an integer), got {stamp!r}")
    samples = sorted(tables["sample"].values(), key=lambda s: (str(scenes.get(s.get("scene_token"), "")),
                                                                  s["timestamp"]))
    if not samples:
        raise ConversionError(f"{folder / 'sample.json'}: no sample: nothing to convert")
    known = {s["token"] for s in samples}
    unknown = sorted(set(preds) - known)
    if results is not None and preds and len(unknown) == len(preds):
        raise ConversionError(f"{results}: none of its {len(preds)} sample token(s) is in {folder} (e.g. "
                              f"{unknown[0]!r}): results of another split or version?")
    if unknown:
        report.notes.append(f"{len(unknown)} sample token(s) of the results are not in the tables (ignored)")
    absent = len(known - set(preds))
    if results is not None and absent:
        report.notes.append(f"warning: {absent} of {len(known)} samples have no entry in the results (the "
                            "submission format lists every sample): they count as frames without detections")
    report.notes.append("distances: ground-plane distance from the ego (LIDAR_TOP key-frame pose), as nuScenes")
    for sample in samples:
        token = sample["token"]
        pose_token = poses.get(token)
        if pose_token not in tables["ego_pose"]:
            report.skipped["samples without a LIDAR_TOP ego pose"] += 1
            continue
        ego = _EgoFrame(tables["ego_pose"][pose_token], f"{folder / 'ego_pose.json'}: ego_pose {pose_token}")
        gts = []
        for ann in sorted(anns.get(token, []), key=lambda a: a["token"]):
            where = f"{folder / 'sample_annotation.json'}: sample_annotation {ann['token']}"
            category = instance_cat.get(ann.get("instance_token"), "")
            detection_class = DETECTION_CLASSES.get(category)
            if detection_class is None:
                report.skipped[f"annotations of categories the benchmark does not evaluate ({category or '?'})"] += 1
                continue
            if not keep_empty and _count(ann, "num_lidar_pts", 1, where) + _count(ann, "num_radar_pts", 0, where) == 0:
                report.skipped["annotations with no lidar or radar point"] += 1
                continue
            pos, box = _object(ann, ego, where)
            cls = class_name(detection_class, mapping, report)
            gts.append(GroundTruthObject(box, cls, math.hypot(pos[0], pos[1]), pos, str(ann.get("instance_token", ""))))
        dets = []
        for i, r in enumerate(preds.get(token, [])):
            where = f"{results}: results[{token}][{i}]"
            pos, box = _object(r, ego, where)
            score = r.get("detection_score")
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise ConversionError(f"{where}: 'detection_score': expected a number, got {score!r}")
            name = r.get("detection_name")
            if not isinstance(name, str) or not name:
                raise ConversionError(f"{where}: 'detection_name': expected a class name, got {name!r}")
            dets.append(Detection(box, class_name(name, mapping, report), float(score), pos))
        report.frames += 1
        report.ground_truth += len(gts)
        report.detections += len(dets)
        stamp_ns = sample["timestamp"] * 1000
        episode = str(scenes.get(sample.get("scene_token"), ""))
        yield Frame(stamp_ns, tuple(dets), tuple(gts), frame_id=token, episode=episode)


def _results(path: Path) -> dict[str, list[dict[str, Any]]]:
    doc = _load(path)
    res = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(res, dict) or not all(isinstance(v, list) for v in res.values()):
        raise ConversionError(f"{path}: expected the nuScenes submission format {{'meta': ..., 'results': "
                              "{sample_token: [box, ...]}}")
    for token, boxes in res.items():
        if not all(isinstance(b, dict) for b in boxes):
            raise ConversionError(f"{path}: results[{token}]: expected a list of box objects")
    return res
