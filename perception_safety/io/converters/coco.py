"""COCO-style ground truth (``images``, ``annotations``, ``categories``) and results to `Frame`s.

Boxes are ``[x, y, width, height]`` in pixels and become ``(x_min, y_min, x_max, y_max)``. COCO has no
distance: each annotation's distance is read from a key (``distance`` by default, as many driving datasets
exported to COCO carry) or, if the user says so, assumed equal for every object (then every object falls in
one distance bin, which the report must know: the report of the conversion says it). ``iscrowd`` regions are
kept as ignore regions (``GroundTruthObject.ignore``: detections there count neither as true nor as false
positives, as COCO's evaluator does) and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject, InvalidValueError
from perception_safety.io.converters.common import ConversionError, ConversionReport, class_name
from perception_safety.safe_io import load_json


def _load(path: Path) -> Any:
    """The JSON in ``path``: bounded read, UTF-8, too-deep nesting an error naming the file (not RecursionError)."""
    return load_json(path, "COCO JSON", error=ConversionError)


def _box(value: Any, where: str) -> Box:
    if not isinstance(value, list) or len(value) != 4 or any(isinstance(v, bool) for v in value):
        raise ConversionError(f"{where}: bbox: expected [x, y, width, height], got {str(value)[:80]}")
    try:
        x, y, w, h = (float(v) for v in value)
        return Box(x, y, x + w, y + h)
    except (TypeError, ValueError, InvalidValueError) as exc:
        raise ConversionError(f"{where}: bbox: {exc}") from None


def _list(doc: Any, key: str, path: Path) -> list[dict[str, Any]]:
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConversionError(f"{path}: '{key}': expected a list of objects")
    return value


def convert_coco(
    ground_truth: str | Path,
    results: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    distance_key: str = "distance",
    assume_distance: float | None = None,
    frame_period_ns: int = 100_000_000,
    report: ConversionReport | None = None,
) -> Iterator[Frame]:
    """Frames, one per image in ``images`` order, with ground truth and (optionally) the result file's boxes."""
    gt_path, mapping = Path(ground_truth), mapping or {}
    report = report if report is not None else ConversionReport()
    doc = _load(gt_path)
    images = _list(doc, "images", gt_path)
    names = {c.get("id"): str(c.get("name")) for c in _list(doc, "categories", gt_path)}
    gts: dict[Any, list[GroundTruthObject]] = defaultdict(list)
    for i, ann in enumerate(_list(doc, "annotations", gt_path)):
        where = f"{gt_path}: annotations[{i}] (id {ann.get('id')})"
        crowd = bool(ann.get("iscrowd"))
        if ann.get("category_id") not in names:
            raise ConversionError(f"{where}: category_id {ann.get('category_id')!r} is not in 'categories'")
        distance = ann.get(distance_key)
        if distance is None and crowd:
            distance = 0.0  # an ignore region is not an object: its distance is never used
        if distance is None:
            if assume_distance is None:
                raise ConversionError(
                    f"{where}: no '{distance_key}' key; COCO has no distances: pass the key your export uses "
                    "(--distance-key) or assume one distance for every object (--assume-distance)"
                )
            distance = assume_distance
        if isinstance(distance, bool) or not isinstance(distance, int | float):
            raise ConversionError(f"{where}: {distance_key}: expected a number, got {str(distance)[:40]}")
        try:
            gts[ann.get("image_id")].append(
                GroundTruthObject(
                    _box(ann.get("bbox"), where),
                    class_name(names[ann["category_id"]], mapping, report),
                    float(distance),
                    None,
                    str(ann["track_id"]) if "track_id" in ann else "",
                    ignore=crowd,
                )
            )
            if crowd:
                report.ignore_regions["iscrowd regions"] += 1
        except InvalidValueError as exc:
            raise ConversionError(f"{where}: {exc}") from None
    if assume_distance is not None:
        report.notes.append(
            f"objects without '{distance_key}' were placed at the assumed distance {assume_distance:g} m: "
            "their distance bins and PCD are not measurements"
        )
    dets: dict[Any, list[Detection]] = defaultdict(list)
    if results is not None:
        res_path = Path(results)
        res = _load(res_path)
        if not isinstance(res, list) or not all(isinstance(r, dict) for r in res):
            raise ConversionError(f"{res_path}: expected a list of result objects")
        for i, r in enumerate(res):
            where = f"{res_path}: [{i}]"
            if r.get("category_id") not in names:
                raise ConversionError(f"{where}: category_id {r.get('category_id')!r} is not in the ground truth")
            score = r.get("score", 1.0)
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise ConversionError(f"{where}: score: expected a number, got {str(score)[:40]}")
            try:
                dets[r.get("image_id")].append(
                    Detection(_box(r.get("bbox"), where), class_name(names[r["category_id"]], mapping, report), score)
                )
            except InvalidValueError as exc:
                raise ConversionError(f"{where}: {exc}") from None
        unknown = set(dets) - {im.get("id") for im in images}
        if unknown:
            report.skipped["results on images not in the ground truth"] += sum(len(dets[k]) for k in unknown)
    for index, image in enumerate(images):
        key = image.get("id")
        report.frames += 1
        report.ground_truth += len(gts.get(key, ()))
        report.detections += len(dets.get(key, ()))
        yield Frame(
            stamp_ns=index * frame_period_ns,
            detections=tuple(dets.get(key, ())),
            ground_truth=tuple(gts.get(key, ())),
            frame_id=str(image.get("file_name", key)),
        )
