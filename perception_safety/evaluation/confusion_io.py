"""Read and write distance-binned confusion matrices (JSON, CSV).

`load_matrices` reads both this package's ``confusion.json`` and the seed paper's
reference file format (``dist_confusion_matrices_nuscenes_yolov3.json``)::

    dc = load_matrices("confusion.json")          # -> DistanceConfusion
    dc.class_labels          # ("ped", "obs", "empty")
    dc.prop_labels           # ("ped", "obs", "ped,obs", "empty")
    dc.bin_edges             # ((0.0, 10.0), (10.0, 20.0), ...)   half-open [lo, hi) metres
    dc.class_cm[k]           # int64 counts [pred, true] of bin k
    dc.probabilities("prop")             # μ_k = P(pred | true), shape [bin, pred, true]
    dc.probabilities("class", pooled=True)  # pooled (not distance-parametrised), [pred, true]
    dc.bin_for_distance(12.0)            # -> 1
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.confusion_types import (
    ORIENTATION,
    DistanceConfusion,
    EmptyColumn,
    column_normalize,
)

FORMAT = "perception_safety.confusion/1"

__all__ = [
    "FORMAT",
    "ConfusionFileError",
    "DistanceConfusion",
    "confusion_from_mapping",
    "load_matrices",
    "to_json_dict",
    "write_csv",
    "write_json",
]


class ConfusionFileError(PerceptionSafetyError):
    """A confusion-matrix file is unreadable or malformed (message names file and key)."""


def _counts(value: Any, where: str, shape: tuple[int, ...]) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfusionFileError(f"{where}: expected nested lists of numbers ({exc})") from exc
    if arr.shape != shape:
        raise ConfusionFileError(f"{where}: expected shape {list(shape)}, got {list(arr.shape)}")
    bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.round(arr))
    if bad.any():
        idx = "".join(f"[{i}]" for i in np.argwhere(bad)[0])
        raise ConfusionFileError(f"{where}{idx}: expected a non-negative integer count, got {arr[bad][0]!r}")
    return arr.astype(np.int64)


def _labels(data: dict[str, Any], key: str, where: str) -> list[str]:
    labels = data.get(key)
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise ConfusionFileError(f"{where}: {key}: expected a non-empty list of strings, got {labels!r}")
    if len(set(labels)) != len(labels):
        raise ConfusionFileError(f"{where}: {key}: duplicate labels {labels}")
    return labels


def _edges(value: Any, where: str, key: str) -> list[tuple[float, float]]:
    if not isinstance(value, list) or not value:
        raise ConfusionFileError(f"{where}: {key}: expected a list of [lo, hi] pairs, got {value!r}")
    out = []
    for i, pair in enumerate(value):
        ok = isinstance(pair, list | tuple) and len(pair) == 2
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
        if not ok or pair[0] >= pair[1]:
            raise ConfusionFileError(f"{where}: {key}[{i}]: expected [lo, hi] with lo < hi, got {pair!r}")
        if out and pair[0] < out[-1][1]:
            raise ConfusionFileError(f"{where}: {key}[{i}]: bins overlap or are not increasing ({pair!r})")
        out.append((float(pair[0]), float(pair[1])))
    return out


def confusion_from_mapping(data: Any, where: str = "<data>") -> DistanceConfusion:
    """Build a `DistanceConfusion` from a decoded JSON object in either supported format.

    Own format: key ``bin_edges``; reference format: key ``bin_edges_m``. Missing pooled
    matrices are the element-wise sum over bins (``pooled_method="sum_of_bins"``).
    """
    if not isinstance(data, dict):
        raise ConfusionFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "bin_edges" in data:
        edge_key = "bin_edges"
    elif "bin_edges_m" in data:
        edge_key = "bin_edges_m"
    else:
        raise ConfusionFileError(f"{where}: missing key 'bin_edges' (or 'bin_edges_m'): not a confusion-matrix file")
    orientation = str(data.get("orientation", ""))
    if orientation and "rows=predicted" not in orientation.replace(" ", ""):
        raise ConfusionFileError(
            f"{where}: orientation: only rows=predicted, cols=true is supported, got {orientation!r}"
        )
    edges = _edges(data[edge_key], where, edge_key)
    class_labels = _labels(data, "class_labels", where)
    prop_labels = _labels(data, "prop_labels", where)
    if class_labels[-1] != prop_labels[-1]:
        raise ConfusionFileError(
            f"{where}: the empty label must be last in both class_labels and prop_labels "
            f"({class_labels[-1]!r} vs {prop_labels[-1]!r})"
        )
    k, nc, npr = len(edges), len(class_labels), len(prop_labels)
    for key in ("class_cm", "prop_cm"):
        if key not in data:
            raise ConfusionFileError(f"{where}: missing key {key!r}")
    class_cm = _counts(data["class_cm"], f"{where}: class_cm", (k, nc, nc))
    prop_cm = _counts(data["prop_cm"], f"{where}: prop_cm", (k, npr, npr))
    have_pooled = "class_cm_pooled" in data and "prop_cm_pooled" in data
    if have_pooled:
        class_pooled = _counts(data["class_cm_pooled"], f"{where}: class_cm_pooled", (nc, nc))
        prop_pooled = _counts(data["prop_cm_pooled"], f"{where}: prop_cm_pooled", (npr, npr))
        method = str(data.get("pooled_method", "single_bin"))
    else:
        class_pooled, prop_pooled, method = class_cm.sum(axis=0), prop_cm.sum(axis=0), "sum_of_bins"
    report = data.get("report", {})
    return DistanceConfusion(
        bin_edges=tuple(edges),
        class_labels=tuple(class_labels),
        prop_labels=tuple(prop_labels),
        class_cm=class_cm,
        prop_cm=prop_cm,
        class_cm_pooled=class_pooled,
        prop_cm_pooled=prop_pooled,
        pooled_method=method,
        source=str(data.get("source", where)),
        report=report if isinstance(report, dict) else {},
    )


def load_matrices(path: str | Path) -> DistanceConfusion:
    """Load distance-binned confusion matrices from ``confusion.json`` or the reference file format.

    Returns a frozen `DistanceConfusion` (counts ``[bin, pred, true]``, ``empty`` last;
    ``probabilities(kind, pooled=False, empty_column="zeros")`` gives μ_k of eqs. 5/8).
    Raises `ConfusionFileError` naming the file and key on bad input.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfusionFileError(f"{path}: cannot read confusion matrices: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfusionFileError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    return confusion_from_mapping(data, str(path))


def _floats(arr: np.ndarray) -> Any:
    return np.round(arr, 12).tolist()


def to_json_dict(
    dc: DistanceConfusion,
    empty_column: EmptyColumn = "zeros",
    metrics: Any = None,
    config: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``confusion.json`` document: orientation, labels, bin edges, counts, normalised values."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "orientation": ORIENTATION,
        "bin_convention": "half-open [lo, hi) metres; objects outside all bins are dropped (see report)",
        "bin_edges": [[lo, hi] for lo, hi in dc.bin_edges],
        "class_labels": list(dc.class_labels),
        "prop_labels": list(dc.prop_labels),
        "class_cm": dc.class_cm.tolist(),
        "prop_cm": dc.prop_cm.tolist(),
        "class_cm_pooled": dc.class_cm_pooled.tolist(),
        "prop_cm_pooled": dc.prop_cm_pooled.tolist(),
        "pooled_method": dc.pooled_method,
        "normalisation": (
            "P(pred | true): each column divided by its sum (eqs. 5, 8); "
            f"a column with no samples is filled with policy {empty_column!r}"
        ),
        "empty_column": empty_column,
        "class_p": _floats(column_normalize(dc.class_cm, empty_column)),
        "prop_p": _floats(column_normalize(dc.prop_cm, empty_column)),
        "class_p_pooled": _floats(column_normalize(dc.class_cm_pooled, empty_column)),
        "prop_p_pooled": _floats(column_normalize(dc.prop_cm_pooled, empty_column)),
        "source": dc.source,
        "report": dc.report,
    }
    if metrics is not None:
        out["metrics"] = metrics
    if config is not None:
        out["config"] = config
    if extra:
        out.update(extra)
    return out


def write_json(path: str | Path, dc: DistanceConfusion, **kwargs: Any) -> Path:
    """Write `to_json_dict` to ``path``."""
    path = Path(path)
    path.write_text(json.dumps(to_json_dict(dc, **kwargs), indent=1) + "\n", encoding="utf-8")
    return path


def write_csv(path: str | Path, dc: DistanceConfusion, empty_column: EmptyColumn = "zeros") -> Path:
    """Long-format CSV: ``matrix,bin,lo,hi,pred,true,count,p`` (bin ``pooled`` for pooled rows)."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["matrix", "bin", "lo", "hi", "pred", "true", "count", "p_pred_given_true"])
        for kind in ("class", "prop"):
            labels = dc.labels(kind)
            blocks = [(str(k), lo, hi, dc.counts(kind)[k]) for k, (lo, hi) in enumerate(dc.bin_edges)]
            blocks.append(("pooled", dc.bin_edges[0][0], dc.bin_edges[-1][1], dc.counts(kind, pooled=True)))
            for name, lo, hi, cm in blocks:
                p = column_normalize(cm, empty_column)
                for i, pred in enumerate(labels):
                    for j, true in enumerate(labels):
                        w.writerow([kind, name, lo, hi, pred, true, int(cm[i, j]), f"{p[i, j]:.12g}"])
    return path


def write_metrics_csv(path: str | Path, rows: list[Any]) -> Path:
    """One row per (bin, class) of `confusion_metrics.ClassMetrics`; undefined rates are empty cells."""
    from dataclasses import asdict, fields

    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if not rows:
            return path
        names = [f.name for f in fields(rows[0])]
        w.writerow(names)
        for r in rows:
            d = asdict(r)
            w.writerow(["" if d[n] is None else d[n] for n in names])
    return path
