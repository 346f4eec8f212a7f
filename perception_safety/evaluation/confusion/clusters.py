"""Class-labeled counts per cluster (episode): what cluster-aware intervals of recall and precision rest on.

The sampling unit (DESIGN.md): frames of one episode are correlated, so every count of the class-labeled
matrix is also kept per episode (``class_cm[c, bin, pred, true]``, pooled ``[c, pred, true]``), with the
unmatched detections per episode, bin and class (``unmatched[c, bin, class]``, the last bin row = detections
without a distance estimate) and the frames per episode. Sums over the cluster axis equal the ordinary
matrices. Mergeable (map per bag, reduce by `merge`); JSON via `to_json` / `from_mapping`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

UNIT = "episode"
_ARRAYS = ("class_cm", "class_cm_pooled", "unmatched", "frames")


def with_episode(frames: Iterable[Any], episode: str) -> Iterator[Any]:
    """Frames without an episode of their own get ``episode`` (a bag's ``perception_safety.episode`` or its path):
    the independent unit of every cluster-aware interval (DESIGN.md, sampling unit)."""
    for f in frames:
        yield f if f.episode else replace(f, episode=episode)


def _frozen(a: Any, shape_tail: tuple[int, ...], k: int, name: str) -> np.ndarray:
    arr = np.array(a, dtype=np.int64, copy=True).reshape((k, *shape_tail))
    if (arr < 0).any():
        raise ValueError(f"clusters.{name}: negative count")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class ClusterCounts:
    """Per-episode class-labeled counts; axis 0 of every array is the cluster (``ids`` in that order)."""

    ids: tuple[str, ...]
    class_cm: np.ndarray
    """``[cluster, bin, pred, true]``."""
    class_cm_pooled: np.ndarray
    """``[cluster, pred, true]``."""
    unmatched: np.ndarray
    """``[cluster, bin + 1, class]``: detections matched to no annotated object; row ``bin`` = no distance."""
    frames: np.ndarray
    """``[cluster]``."""
    unit: str = UNIT

    def __post_init__(self) -> None:
        k = len(self.ids)
        if len(set(self.ids)) != k:
            raise ValueError("clusters: duplicate cluster ids")
        cm = np.asarray(self.class_cm)
        if cm.ndim != 4 or cm.shape[0] != k:
            raise ValueError(f"clusters.class_cm: expected [{k}, bin, pred, true], got {cm.shape}")
        _, nb, c1, _ = cm.shape
        object.__setattr__(self, "ids", tuple(str(i) for i in self.ids))
        object.__setattr__(self, "class_cm", _frozen(cm, (nb, c1, c1), k, "class_cm"))
        object.__setattr__(self, "class_cm_pooled", _frozen(self.class_cm_pooled, (c1, c1), k, "class_cm_pooled"))
        object.__setattr__(self, "unmatched", _frozen(self.unmatched, (nb + 1, c1 - 1), k, "unmatched"))
        object.__setattr__(self, "frames", _frozen(self.frames, (), k, "frames"))

    @classmethod
    def empty(cls, n_bins: int, n_labels: int) -> ClusterCounts:
        return _empty(n_bins, n_labels)  # immutable: one per shape

    @classmethod
    def built(cls, ids: tuple[str, ...], *arrays: np.ndarray) -> ClusterCounts:
        """From arrays just counted (int64, non-negative, consistent shapes, written by no one afterwards): made
        read-only without the constructor's copy and checks (the evaluate map makes ~10 per episode)."""
        out = object.__new__(cls)
        for name, value in zip(("ids", *_ARRAYS, "unit"), (ids, *arrays, UNIT), strict=True):
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            object.__setattr__(out, name, value)
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def merge(self, other: ClusterCounts) -> ClusterCounts:
        """Sum by cluster id (an id in both adds up; new ids are appended in order)."""
        if other.class_cm.shape[1:] != self.class_cm.shape[1:]:
            raise ValueError("cannot merge cluster counts of different bins or labels")
        if other.unit == self.unit and not (self.ids and other.ids):  # one side empty; arrays are read-only: share
            return other if self.ids == () else self
        if self.ids == other.ids:  # the same clusters (a bag read in several batches): add
            return ClusterCounts(self.ids, *(getattr(self, n) + getattr(other, n) for n in _ARRAYS), unit=self.unit)
        ids = list(dict.fromkeys([*self.ids, *other.ids]))
        pos = {c: i for i, c in enumerate(ids)}
        arrays = []
        for name in _ARRAYS:
            a, b = getattr(self, name), getattr(other, name)
            out = np.zeros((len(ids), *a.shape[1:]), dtype=np.int64)
            np.add.at(out, [pos[c] for c in self.ids], a)
            np.add.at(out, [pos[c] for c in other.ids], b)
            arrays.append(out)
        return ClusterCounts(tuple(ids), *arrays, unit=self.unit)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "ids": list(self.ids),
            "frames": self.frames.tolist(),
            "class_cm": self.class_cm.tolist(),
            "class_cm_pooled": self.class_cm_pooled.tolist(),
            "unmatched": self.unmatched.tolist(),
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], n_bins: int, n_labels: int, where: str) -> ClusterCounts:
        """Read `to_json` output; errors name ``where`` and the key."""
        try:
            ids = tuple(str(i) for i in data["ids"])
            k = len(ids)
            if k == 0:
                return cls.empty(n_bins, n_labels)
            shapes = {
                "class_cm": (k, n_bins, n_labels, n_labels),
                "class_cm_pooled": (k, n_labels, n_labels),
                "unmatched": (k, n_bins + 1, n_labels - 1),
                "frames": (k,),
            }
            arrays = {}
            for key, shape in shapes.items():
                arr = np.asarray(data[key], dtype=np.int64)
                if arr.shape != shape:
                    raise ValueError(f"{key}: expected shape {shape}, got {arr.shape}")
                arrays[key] = arr
            return cls(ids, unit=str(data.get("unit", UNIT)), **arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: clusters: {exc}") from exc

    def column(self, label: int, bins: Sequence[int] | None) -> np.ndarray:
        """``[cluster, pred]`` counts of true ``label`` summed over ``bins`` (None = the pooled matrix)."""
        if bins is None:
            return self.class_cm_pooled[:, :, label]
        return self.class_cm[:, list(bins)].sum(axis=1)[:, :, label]

    def row(self, label: int, bins: Sequence[int] | None) -> np.ndarray:
        """``[cluster, true]`` counts predicted as ``label`` summed over ``bins`` (None = pooled)."""
        if bins is None:
            return self.class_cm_pooled[:, label, :]
        return self.class_cm[:, list(bins)].sum(axis=1)[:, label, :]

    def unmatched_of(self, label: int, bins: Sequence[int] | None) -> np.ndarray:
        """``[cluster]`` unmatched detections of ``label`` in ``bins`` (None = all, with those without distance)."""
        if bins is None:
            return self.unmatched[:, :, label].sum(axis=1)
        return self.unmatched[:, list(bins)].sum(axis=1)[:, label]


@lru_cache(maxsize=16)
def _empty(n_bins: int, n_labels: int) -> ClusterCounts:
    z = np.zeros
    return ClusterCounts(
        (), z((0, n_bins, n_labels, n_labels)), z((0, n_labels, n_labels)), z((0, n_bins + 1, n_labels - 1)), z(0)
    )


def merge_all(parts: Sequence[ClusterCounts | None]) -> ClusterCounts | None:
    """The merge over parts; None as soon as one part has no cluster information (cannot be attributed)."""
    if not parts or any(p is None for p in parts):
        return None
    if len(parts) <= 2 or all(p.ids == parts[0].ids for p in parts):  # type: ignore[union-attr]
        out = parts[0]
        for p in parts[1:]:
            out = out.merge(p)  # type: ignore[union-attr]
        return out
    # Many parts (the reduce: one per episode and band): every id's rows added in one pass, not part by part.
    done: list[ClusterCounts] = list(parts)  # type: ignore[arg-type]
    if any(p.class_cm.shape[1:] != done[0].class_cm.shape[1:] for p in done):
        raise ValueError("cannot merge cluster counts of different bins or labels")
    ids = list(dict.fromkeys(c for p in done for c in p.ids))
    pos = {c: i for i, c in enumerate(ids)}
    rows = np.fromiter((pos[c] for p in done for c in p.ids), dtype=np.int64)
    arrays = []
    for name in _ARRAYS:
        stacked = np.concatenate([getattr(p, name) for p in done])
        out_a = np.zeros((len(ids), *stacked.shape[1:]), dtype=np.int64)
        np.add.at(out_a, rows, stacked)
        arrays.append(out_a)
    return ClusterCounts(tuple(ids), *arrays, unit=done[0].unit)


def batch_counts(
    frame_cluster: np.ndarray,
    n_labels: int,
    gt: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    empty_cells: np.ndarray,
    unmatched: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> ClusterCounts:
    """One batch's class-labeled counts per cluster: the same counts as the accumulator's (Algorithm 2).

    ``frame_cluster``: episode per frame (``""`` = unknown: those frames are left out); ``gt = (frame, bin,
    pred, true)`` per ground-truth object (bin outside ``[0, n_bins)`` = out of range); ``empty_cells[f, bin]``
    True where frame ``f`` has no binned object in the bin; ``unmatched = (frame, class, bin)`` per unmatched
    detection (bin ``n_bins`` = no distance).
    """
    n_f, n_bins = empty_cells.shape
    c1 = n_labels
    known = frame_cluster != ""
    named = frame_cluster[known]
    if len(named) and (named == named[0]).all():  # one episode (a bag): no sort of the names
        ids, inv = np.array([str(named[0])]), np.zeros(len(named), dtype=np.int64)
    else:
        ids, inv = np.unique(named.astype(str), return_inverse=True)
    k = len(ids)
    cl = np.full(n_f, -1, dtype=np.int64)
    cl[known] = inv
    g_frame, g_bin, g_pred, g_true = gt
    gc = cl[g_frame]
    ok = gc >= 0
    binned = ok & (g_bin >= 0) & (g_bin < n_bins)
    key = ((gc[binned] * n_bins + g_bin[binned]) * c1 + g_pred[binned]) * c1 + g_true[binned]
    class_cm = np.bincount(key, minlength=k * n_bins * c1 * c1).reshape(k, n_bins, c1, c1)
    pooled = np.bincount((gc[binned] * c1 + g_pred[binned]) * c1 + g_true[binned], minlength=k * c1 * c1)
    pooled = pooled.reshape(k, c1, c1)
    e = c1 - 1
    fk = cl[known]
    empty = empty_cells[known]
    np.add.at(class_cm[:, :, e, e], fk, empty.astype(np.int64))
    np.add.at(pooled[:, e, e], fk, empty.all(axis=1).astype(np.int64))
    d_frame, d_class, d_bin = unmatched
    dc = cl[d_frame]
    dk = dc >= 0
    um = np.bincount(
        (dc[dk] * (n_bins + 1) + d_bin[dk]) * (c1 - 1) + d_class[dk], minlength=k * (n_bins + 1) * (c1 - 1)
    )
    frames = np.bincount(fk, minlength=k)
    return ClusterCounts.built(tuple(str(i) for i in ids.tolist()), class_cm, pooled,
                                um.reshape(k, n_bins + 1, c1 - 1), frames)  # fmt: skip
