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
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.confusion.types import (
    ORIENTATION,
    DistanceConfusion,
    EmptyColumn,
    column_normalize,
)
from perception_safety.evaluation.confusion.uncertainty import entry_intervals
from perception_safety.safe_io import atomic_open, load_json, write_text

FORMAT = "perception_safety.confusion/1"

__all__ = [
    "FORMAT",
    "ConfusionFileError",
    "DistanceConfusion",
    "confusion_from_mapping",
    "load_matrices",
    "read_detection_csv",
    "to_json_dict",
    "write_csv",
    "write_json",
    "write_metrics_csv",
]


class ConfusionFileError(PerceptionSafetyError):
    """A confusion-matrix file is unreadable or malformed (message names file and key)."""


def _counts(value: Any, where: str, shape: tuple[int, ...]) -> np.ndarray:
    whole = isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.shape == shape
    if whole and value.min(initial=0) >= 0:
        return value.astype(np.int64)  # integer counts already (an in-memory partial): nothing to round or check
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
    clusters = None
    if isinstance(data.get("clusters"), dict):
        from perception_safety.evaluation.confusion.clusters import ClusterCounts

        try:
            clusters = ClusterCounts.from_mapping(data["clusters"], k, nc, where)
        except ValueError as exc:
            raise ConfusionFileError(str(exc)) from exc
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
        clusters=clusters,
    )


def load_matrices(path: str | Path) -> DistanceConfusion:
    """Load distance-binned confusion matrices from ``confusion.json`` or the reference file format.

    Returns a frozen `DistanceConfusion` (counts ``[bin, pred, true]``, ``empty`` last;
    ``probabilities(kind, pooled=False, empty_column="zeros")`` gives μ_k of eqs. 5/8).
    Raises `ConfusionFileError` naming the file and key on bad input.
    """
    path = Path(path)
    data = load_json(path, "confusion matrices", error=ConfusionFileError)  # bounded, UTF-8, nesting checked
    return confusion_from_mapping(data, str(path))


def _floats(arr: np.ndarray) -> Any:
    return np.round(arr, 12).tolist()


def to_json_dict(
    dc: DistanceConfusion,
    empty_column: EmptyColumn = "zeros",
    metrics: Any = None,
    config: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The ``confusion.json`` document: orientation, labels, bin edges, counts, normalised values and their
    two-sided Clopper-Pearson intervals at level ``1 - alpha`` (``*_p_lower`` / ``*_p_upper``)."""
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
        "alpha": alpha,
        "interval": f"two-sided Clopper-Pearson at level {1 - alpha:g} of count / column sum; [0, 1] without samples",
    }
    for name, cm in (
        ("class_p", dc.class_cm),
        ("prop_p", dc.prop_cm),
        ("class_p_pooled", dc.class_cm_pooled),
        ("prop_p_pooled", dc.prop_cm_pooled),
    ):
        lo, hi = entry_intervals(cm, alpha)
        out[f"{name}_lower"], out[f"{name}_upper"] = _floats(lo), _floats(hi)
    out |= {
        "source": dc.source,
        "report": dc.report,
    }
    if dc.clusters is not None:
        out["clusters"] = dc.clusters.to_json()
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
    write_text(path, json.dumps(to_json_dict(dc, **kwargs), indent=1) + "\n")
    return path


def write_csv(
    path: str | Path, dc: DistanceConfusion, empty_column: EmptyColumn = "zeros", alpha: float = 0.05
) -> Path:
    """Long-format CSV: ``matrix,bin,lo,hi,pred,true,count,column_n,p,p_lower,p_upper`` (bin ``pooled`` for
    pooled rows); the bounds are the two-sided Clopper-Pearson interval at ``1 - alpha``."""
    path = Path(path)
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "matrix",
                "bin",
                "lo",
                "hi",
                "pred",
                "true",
                "count",
                "column_n",
                "p_pred_given_true",
                "p_lower",
                "p_upper",
            ]
        )
        for kind in ("class", "prop"):
            labels = dc.labels(kind)
            blocks = [(str(k), lo, hi, dc.counts(kind)[k]) for k, (lo, hi) in enumerate(dc.bin_edges)]
            blocks.append(("pooled", dc.bin_edges[0][0], dc.bin_edges[-1][1], dc.counts(kind, pooled=True)))
            for name, lo, hi, cm in blocks:
                p = column_normalize(cm, empty_column)
                p_lo, p_hi = entry_intervals(cm, alpha)
                n = cm.sum(axis=0)
                for i, pred in enumerate(labels):
                    for j, true in enumerate(labels):
                        bounds = (f"{p[i, j]:.12g}", f"{p_lo[i, j]:.12g}", f"{p_hi[i, j]:.12g}")
                        w.writerow([kind, name, lo, hi, pred, true, int(cm[i, j]), int(n[j]), *bounds])
    return path


def write_metrics_csv(path: str | Path, rows: list[Any]) -> Path:
    """One row per (bin, class) of `confusion_metrics.ClassMetrics`; undefined rates are empty cells."""
    from dataclasses import asdict, fields

    path = Path(path)
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        if not rows:
            return path
        names = [f.name for f in fields(rows[0])]
        w.writerow(names)
        for r in rows:
            d = asdict(r)
            w.writerow(["" if d[n] is None else d[n] for n in names])
    return path


CSV_COLUMNS = ("frame", "kind", "x_min", "y_min", "x_max", "y_max", "class", "score", "distance")


def read_detection_csv(path: str | Path, mapper: Any, chunk_frames: int = 4096) -> Iterator[Any]:
    """Stream a CSV detection dataset as `FrameBatch`es (no per-object Python objects are built).

    Header ``frame,kind,x_min,y_min,x_max,y_max,class,score,distance``; one row per object,
    ``kind`` is ``det`` (score optional), ``gt`` (distance required) or ``frame`` (declares a
    frame, e.g. one without objects; other columns empty). A frame's rows are contiguous.
    Errors name file, line and column.
    """
    from perception_safety.evaluation.confusion.batch import FrameBatch

    path = Path(path)
    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise ConfusionFileError(f"{path}: cannot read detection CSV: {exc.strerror or exc}") from exc
    with fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != CSV_COLUMNS:
            raise ConfusionFileError(f"{path}:1: expected header {','.join(CSV_COLUMNS)}, got {header!r}")
        seen: set[str] = set()
        current: str | None = None
        rows: dict[str, list[Any]] = {k: [] for k in ("db", "dc", "gb", "gc", "gd", "df", "gf")}
        unmapped: dict[str, Counter[str]] = {"det": Counter(), "gt": Counter()}
        n_frames = 0

        def flush() -> Any:
            nonlocal rows, unmapped, n_frames
            df = np.asarray(rows["df"], dtype=np.int64)
            gf = np.asarray(rows["gf"], dtype=np.int64)
            batch = FrameBatch(
                det_offsets=np.concatenate([[0], np.cumsum(np.bincount(df, minlength=n_frames))]).astype(np.int64),
                det_boxes=np.asarray(rows["db"], dtype=np.float64).reshape(-1, 4),
                det_classes=np.asarray(rows["dc"], dtype=np.int64),
                gt_offsets=np.concatenate([[0], np.cumsum(np.bincount(gf, minlength=n_frames))]).astype(np.int64),
                gt_boxes=np.asarray(rows["gb"], dtype=np.float64).reshape(-1, 4),
                gt_classes=np.asarray(rows["gc"], dtype=np.int64),
                gt_distances=np.asarray(rows["gd"], dtype=np.float64),
                unmapped_detections=unmapped["det"],
                unmapped_ground_truth=unmapped["gt"],
            )
            rows = {k: [] for k in rows}
            unmapped = {"det": Counter(), "gt": Counter()}
            n_frames = 0
            return batch

        for lineno, row in enumerate(reader, start=2):
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != len(CSV_COLUMNS):
                raise ConfusionFileError(f"{path}:{lineno}: expected {len(CSV_COLUMNS)} columns, got {len(row)}")
            frame, kind = row[0], row[1].strip()
            if frame != current:
                if frame in seen:
                    raise ConfusionFileError(f"{path}:{lineno}: frame {frame!r} resumes after other frames")
                if n_frames == chunk_frames:
                    yield flush()
                seen.add(frame)
                current = frame
                n_frames += 1
            if kind == "frame":
                continue
            if kind not in ("det", "gt"):
                raise ConfusionFileError(f"{path}:{lineno}:2: kind must be det, gt or frame, got {kind!r}")
            box = [_csv_float(row[i], path, lineno, i) for i in range(2, 6)]
            if box[0] > box[2] or box[1] > box[3]:
                raise ConfusionFileError(f"{path}:{lineno}: inverted box {box}")
            label = row[6]
            code = mapper(label)
            if kind == "gt":
                dist = _csv_float(row[8], path, lineno, 8)
                if dist < 0:
                    raise ConfusionFileError(f"{path}:{lineno}:9: negative distance {dist}")
            if code < 0:
                unmapped[kind][label] += 1
                continue
            if kind == "det":
                rows["db"].append(box)
                rows["dc"].append(code)
                rows["df"].append(n_frames - 1)
            else:
                rows["gb"].append(box)
                rows["gc"].append(code)
                rows["gd"].append(dist)
                rows["gf"].append(n_frames - 1)
        if n_frames:
            yield flush()


def _csv_float(text: str, path: Path, line: int, col: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfusionFileError(
            f"{path}:{line}:{col + 1}: {CSV_COLUMNS[col]}: expected a number, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise ConfusionFileError(f"{path}:{line}:{col + 1}: {CSV_COLUMNS[col]}: non-finite value {text!r}")
    return value
