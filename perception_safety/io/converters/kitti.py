"""KITTI object labels (and detections in the same format) to `Frame`s.

One text file per image, one object per line: ``type truncated occluded alpha x1 y1 x2 y2 h w l X Y Z ry``
(15 fields) and, in detection files, a 16th field ``score``. ``X Y Z`` is the bottom centre of the 3D box in
camera coordinates (x right, y down, z forward, metres); it becomes the ego-frame position
``(Z, -X, -Y)`` (x forward, y left, z up) and the distance is its norm. ``DontCare`` regions of label files are
kept as ignore regions (``GroundTruthObject.ignore``: detections there count neither as true nor as false
positives, as KITTI's evaluator does); in detection files they are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject, InvalidValueError
from perception_safety.io.converters.common import ConversionError, ConversionReport, class_name

IGNORED = ("DontCare",)


def _fields(path: Path, lineno: int, line: str, n_min: int) -> list[str]:
    parts = line.split()
    if len(parts) < n_min:
        raise ConversionError(f"{path}:{lineno}: expected at least {n_min} fields, got {len(parts)}")
    return parts


def _floats(path: Path, lineno: int, parts: list[str]) -> list[float]:
    try:
        values = [float(v) for v in parts]
    except ValueError as exc:
        raise ConversionError(f"{path}:{lineno}: {exc}") from None
    if not all(math.isfinite(v) for v in values):
        raise ConversionError(f"{path}:{lineno}: non-finite number")
    return values


def read_label_file(
    path: Path, mapping: dict[str, str], report: ConversionReport, detections: bool = False
) -> list[GroundTruthObject] | list[Detection]:
    """The objects of one label (``detections=False``) or detection file; bad lines name file:line."""
    out: list = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversionError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = _fields(path, lineno, line, 16 if detections else 15)
        kind = parts[0]
        if kind in IGNORED and detections:
            report.skipped[f"'{kind}' regions"] += 1
            continue
        values = _floats(path, lineno, parts[1:16])
        x1, y1, x2, y2 = values[3:7]
        if kind in IGNORED:
            try:
                out.append(GroundTruthObject(Box(x1, y1, x2, y2), kind, 0.0, None, "", ignore=True))
            except InvalidValueError as exc:
                raise ConversionError(f"{path}:{lineno}: {exc}") from None
            report.ignore_regions[f"'{kind}' regions"] += 1
            continue
        cam_x, cam_y, cam_z = values[10:13]
        try:
            box = Box(x1, y1, x2, y2)
            name = class_name(kind, mapping, report)
            if detections:
                out.append(Detection(box, name, values[14]))
            else:
                out.append(GroundTruthObject.at_position(box, name, (cam_z, -cam_x, -cam_y)))
        except InvalidValueError as exc:
            raise ConversionError(f"{path}:{lineno}: {exc}") from None
    return out


def convert_kitti(
    labels: str | Path,
    detections: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    frame_period_ns: int = 100_000_000,
    report: ConversionReport | None = None,
) -> Iterator[Frame]:
    """Frames from a KITTI ``label_2``-style folder (sorted by file name) and an optional detection folder.

    A label file without a detection file gives a frame with no detections (counted); ``stamp_ns`` is the
    frame index times ``frame_period_ns`` (KITTI object images are 10 Hz keyframes, not a sequence).
    """
    labels, mapping = Path(labels), mapping or {}
    report = report if report is not None else ConversionReport()
    if not labels.is_dir():
        raise ConversionError(f"{labels}: not a folder of KITTI label files")
    files = sorted(labels.glob("*.txt"))
    if not files:
        raise ConversionError(f"{labels}: no *.txt label files")
    det_dir = Path(detections) if detections is not None else None
    if det_dir is not None and not det_dir.is_dir():
        raise ConversionError(f"{det_dir}: not a folder of KITTI detection files")
    for index, path in enumerate(files):
        gts = read_label_file(path, mapping, report)
        dets: list = []
        if det_dir is not None:
            det_path = det_dir / path.name
            if det_path.exists():
                dets = read_label_file(det_path, mapping, report, detections=True)
            else:
                report.skipped["frames without a detection file (no detections)"] += 1
        report.frames += 1
        report.ground_truth += len(gts)
        report.detections += len(dets)
        yield Frame(
            stamp_ns=index * frame_period_ns, detections=tuple(dets), ground_truth=tuple(gts), frame_id=path.stem
        )
