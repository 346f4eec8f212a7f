"""A partial's JSON text: the map's result as it travels between processes and lies in ``OUT/partials/``.

Evidence references and BBSL test cases are lists of objects with the same keys, and every reference of an
episode repeats its input's path, image topic and episode: written as objects, keys and those strings were over
half of a partial's bytes. The confusion counts (the episode's, each band's, each verdict's, and per episode for
the cluster-aware intervals) and AP's per-detection TP/FP masks are small nested lists, each a Python list to
build when the reduce decodes them: most of its JSON decode time (issue 27).

Format ``perception_safety.partial/3`` writes each record list packed (`pack_records`: the distinct key lists
once, the values every record of a list shares once, one row per record) and each count or mask array flat
(``{"shape": [...], "counts": [...]}``). `read_partial` restores the records exactly (same keys in the same order,
same values) and the arrays as int64 numpy arrays (their readers take any array-like), so the reduce reads what
the map built. A partial of format ``/2`` (written out in full) is read as it is; any other format is refused by
name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from operator import itemgetter
from typing import Any

import numpy as np

from perception_safety.errors import PerceptionSafetyError
from perception_safety.pipeline.bag_pass import PARTIAL_FORMAT

UNPACKED_FORMAT = "perception_safety.partial/2"
"""The format before packing: read unchanged."""
READABLE = (PARTIAL_FORMAT, UNPACKED_FORMAT)


class PartialError(PerceptionSafetyError):
    """A partial that is not JSON, not of a readable format, or whose packed lists are damaged (file named)."""


def pack_records(records: list[dict[str, Any]], shared: tuple[str, ...] = ()) -> dict[str, Any]:
    """``{"keys": [key lists], "common": {key: value}, "rows": [[key list, other values]]}``: ``common`` holds the
    keys of ``shared`` whose (string) value every record has."""
    first = records[0] if records else {}
    common = {k: first[k] for k in shared if isinstance(first.get(k), str) and _same(records, k)}
    keysets: dict[tuple[str, ...], int] = {}
    getters: list[Callable[[dict[str, Any]], Any]] = []
    rows = []
    for r in records:
        keys = tuple(r)
        k = keysets.get(keys)
        if k is None:
            k = keysets[keys] = len(keysets)
            getters.append(_values_of([key for key in keys if key not in common]))
        rows.append([k, *getters[k](r)])
    return {"keys": [list(k) for k in keysets], "common": common, "rows": rows}


def _same(records: list[dict[str, Any]], key: str) -> bool:
    """Every record has ``key`` with one (hashable) value."""
    try:
        return len(set(map(itemgetter(key), records))) == 1
    except (KeyError, TypeError):  # missing somewhere, or a list/dict value: not one shared string
        return False


def _values_of(keys: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """The values of ``keys`` of a record, in order, as a tuple (one C call per record)."""
    if not keys:
        return lambda _r: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda r: (r[key],)
    return itemgetter(*keys)


REF_SHARED = ("kind", "label", "detail", "bag", "topic", "episode")
"""Keys of an evidence reference that are often the same in every reference of a cell (kept once when they are)."""


def unpack_records(packed: Mapping[str, Any], _shared: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The records `pack_records` packed."""
    common = packed["common"]
    plans = [[(key, key in common) for key in keys] for keys in packed["keys"]]
    sizes = [1 + sum(not shared for _, shared in plan) for plan in plans]
    out = []
    for row in packed["rows"]:
        if len(row) != sizes[row[0]]:
            raise ValueError(f"a row of {len(row)} items for key list {row[0]} of {sizes[row[0]] - 1} values")
        values = iter(row[1:])
        out.append({key: common[key] if shared else next(values) for key, shared in plans[row[0]]})
    return out


def _episodes(partial: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The episode entries of a partial (a damaged shape is left for the reader to name)."""
    episodes = partial.get("episodes")
    yield from (ep for ep in (episodes if isinstance(episodes, list) else ()) if isinstance(ep, dict))


def _lists(partial: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], str, tuple[str, ...]]]:
    """(holder, key, keys worth sharing) of every packed list of a partial: evidence references per cell, BBSL
    test cases per spec."""
    for ep in _episodes(partial):
        for cell in (ep.get("evidence") or {}).get("cells", {}).values():
            yield cell, "refs", REF_SHARED
        for spec in (ep.get("bbsl") or {}).values():
            yield spec, "test_cases", ()


COUNTS = ("class_cm", "prop_cm", "class_cm_pooled", "prop_cm_pooled")
"""The count arrays of a confusion part (`breakdowns.counts_json`)."""
CLUSTER_COUNTS = ("frames", "class_cm", "class_cm_pooled", "unmatched")
"""The count arrays of its per-episode counts (``clusters``)."""


def _count_arrays(partial: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """(holder, key) of every integer array of a partial: the confusion counts (the episode's, each band's, each
verdict's) and AP's TP/FP masks."""
    for ep in _episodes(partial):
        parts = [ep.get("confusion")]
        for bands in ("speed_bands", "size_bands"):
            parts += [p.get("confusion") for p in (ep.get(bands) or {}).values() if isinstance(p, dict)]
        verdicts = ep.get("verdicts") or {}
        parts += [verdicts.get("alarm"), verdicts.get("no_alarm")]
        for part in parts:
            if isinstance(part, dict):
                yield from ((part, key) for key in COUNTS if key in part)
                clusters = part.get("clusters")
                if isinstance(clusters, dict):
                    yield from ((clusters, key) for key in CLUSTER_COUNTS if key in clusters)
        ap = ep.get("detection_ap")
        if isinstance(ap, dict):  # the per-detection TP/FP bit masks (one row of range masks per detection)
            yield from ((ap, key) for key in ("tp", "fp") if key in ap)


def pack_counts(value: Any) -> Any:
    """An integer array (or rectangular nested list) as ``{"shape", "counts"}`` (flat); another array as nested
    lists, anything else as it is."""
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged
        return value
    if arr.dtype.kind not in "iu":
        return arr.tolist() if isinstance(value, np.ndarray) else value
    return {"shape": list(arr.shape), "counts": arr.ravel().tolist()}


def unpack_counts(value: Any) -> Any:
    """The int64 array `pack_counts` packed (a value it left as it was: unchanged)."""
    if not isinstance(value, dict):
        return value
    return np.asarray(value["counts"], dtype=np.int64).reshape(value["shape"])


def _convert(partial: dict[str, Any], records: Callable[..., Any], counts: Callable[[Any], Any]) -> dict[str, Any]:
    for holder, key, shared in _lists(partial):
        if key in holder:
            holder[key] = records(holder[key], shared)
    for holder, key in _count_arrays(partial):
        holder[key] = counts(holder[key])
    return partial


def partial_text(partial: dict[str, Any]) -> str:
    """The JSON text of a partial the map built (format `PARTIAL_FORMAT`: record lists and count arrays packed;
    the dict given is left as it was)."""
    held = [(holder, key, holder[key]) for holder, key, _ in _lists(partial) if key in holder]
    held += [(holder, key, holder[key]) for holder, key in _count_arrays(partial)]
    try:
        return json.dumps(_convert(partial, pack_records, pack_counts), separators=(",", ":"), check_circular=False)
    finally:
        for holder, key, value in held:
            holder[key] = value


def unpack_partial(doc: Any, name: str) -> dict[str, Any]:
    """A decoded partial of a readable format with its record lists restored (``name``: the file, for errors)."""
    if not isinstance(doc, dict) or doc.get("format") not in READABLE:
        found = f"format {doc.get('format')!r}" if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
        raise PartialError(f"{name}: not a partial this version reads ({found}; reads {', '.join(READABLE)}): "
                           "rerun `evaluate` to rebuild it")
    if doc["format"] == UNPACKED_FORMAT:
        return doc
    try:
        return _convert(doc, unpack_records, unpack_counts)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise PartialError(f"{name}: damaged partial: a packed list is malformed ({type(exc).__name__}: {exc})") \
            from None


def read_partial(text: str, name: str) -> dict[str, Any]:
    """The partial in ``text`` (JSON of a readable format), record lists restored; `PartialError` names ``name``."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PartialError(f"{name}: unreadable partial: {exc}") from None
    return unpack_partial(doc, name)
