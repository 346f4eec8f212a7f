"""The value type of distance-binned confusion matrices and the probability functions μ_k.

Orientation everywhere: ``cm[bin, pred, true]`` (rows predicted, columns true), the
auxiliary label ``empty`` last (seed paper, Definition 2 and Remark 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from perception_safety.evaluation.confusion.clusters import ClusterCounts

Kind = Literal["class", "prop"]
EmptyColumn = Literal["zeros", "uniform", "identity"]
EMPTY_COLUMN_POLICIES: tuple[str, ...] = ("zeros", "uniform", "identity")
ORIENTATION = "cm[bin][pred][true] = count(predicted label pred, true label true); rows=predicted, cols=true"


def proposition_subsets(classes: Sequence[str]) -> list[tuple[int, ...]]:
    """Non-empty subsets of class indices in the paper's order (by size, then class order); ∅ is appended by callers."""
    n = len(classes)
    out: list[tuple[int, ...]] = []
    for size in range(1, n + 1):
        out.extend(combinations(range(n), size))
    return out


def proposition_labels(classes: Sequence[str], empty_label: str = "empty") -> list[str]:
    """Labels of 2^P (eq. 4): ``ped``, ``obs``, ``ped,obs``, ..., ``empty`` last."""
    return [",".join(classes[i] for i in s) for s in proposition_subsets(classes)] + [empty_label]


@lru_cache(maxsize=16)
def subset_lookup(n_classes: int) -> np.ndarray:
    """Map a class bitmask (bit i = class i present) to its row/column in the proposition matrix (read-only; made
    once per class count: every accumulator of the evaluate map asks for it)."""
    lut = np.empty(1 << n_classes, dtype=np.int64)
    subsets = proposition_subsets([str(i) for i in range(n_classes)])
    for idx, s in enumerate(subsets):
        lut[sum(1 << i for i in s)] = idx
    lut[0] = len(subsets)
    lut.setflags(write=False)
    return lut


def column_normalize(cm: np.ndarray, empty_column: EmptyColumn = "zeros") -> np.ndarray:
    """Column-normalised ``P(pred | true)`` over the last two axes (eqs. 5 and 8).

    A column with no counts (the true label never occurred) has no defined
    distribution; ``empty_column`` fixes it: ``zeros`` (all 0, the column sums to 0),
    ``uniform`` (1/n each) or ``identity`` (1 on the diagonal). Never NaN.
    """
    if empty_column not in EMPTY_COLUMN_POLICIES:
        raise ValueError(f"empty_column must be one of {EMPTY_COLUMN_POLICIES}, got {empty_column!r}")
    cm = np.asarray(cm, dtype=np.float64)
    totals = cm.sum(axis=-2, keepdims=True)
    out = np.zeros_like(cm)
    np.divide(cm, totals, out=out, where=totals > 0)
    empty = np.broadcast_to(totals == 0, cm.shape)
    if empty_column == "uniform":
        out[empty] = 1.0 / cm.shape[-2]
    elif empty_column == "identity":
        eye = np.broadcast_to(np.eye(cm.shape[-2], cm.shape[-1], dtype=bool), cm.shape)
        out[empty & eye] = 1.0
    return out


def _frozen(arr: Any, name: str, ndim: int) -> np.ndarray:
    a = np.array(arr, dtype=np.int64, copy=True)
    if a.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {a.shape}")
    if (a < 0).any():
        raise ValueError(f"{name}: negative count")
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class DistanceConfusion:
    """Distance-binned class- and proposition-labeled confusion matrices (Algorithms 1-2, eqs. 4 and 7).

    - ``bin_edges``: tuple of ``(lo, hi)`` metres per bin, half-open ``[lo, hi)``.
    - ``class_labels``: evaluation classes then ``empty`` (e.g. ``("ped", "obs", "empty")``).
    - ``prop_labels``: subsets of the classes, ``empty`` (= ∅) last (``("ped", "obs", "ped,obs", "empty")``).
    - ``class_cm`` / ``prop_cm``: int64 counts, shape ``[bin, pred, true]``.
    - ``class_cm_pooled`` / ``prop_cm_pooled``: ``[pred, true]``, not distance-parametrised;
      ``pooled_method`` says how they were obtained: ``"single_bin"`` (recomputed from frames
      with one bin spanning all edges, the paper's canonical matrix) or ``"sum_of_bins"``
      (element-wise sum of the per-bin matrices, used when a file carries no pooled matrices).
    - ``report``: counters of the run that produced it (dropped objects, ignored detections, ...).
    - ``clusters``: the class-labeled counts per episode (the sampling unit), or None when the input carries
      no cluster information (a bare count matrix: intervals are then plain Clopper-Pearson).
    """

    bin_edges: tuple[tuple[float, float], ...]
    class_labels: tuple[str, ...]
    prop_labels: tuple[str, ...]
    class_cm: np.ndarray
    prop_cm: np.ndarray
    class_cm_pooled: np.ndarray
    prop_cm_pooled: np.ndarray
    pooled_method: str = "single_bin"
    source: str = ""
    report: dict[str, Any] = field(default_factory=dict, compare=False)
    clusters: ClusterCounts | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        edges = tuple((float(lo), float(hi)) for lo, hi in self.bin_edges)
        object.__setattr__(self, "bin_edges", edges)
        object.__setattr__(self, "class_labels", tuple(self.class_labels))
        object.__setattr__(self, "prop_labels", tuple(self.prop_labels))
        k, nc, npr = len(edges), len(self.class_labels), len(self.prop_labels)
        for name, ndim, shape in (
            ("class_cm", 3, (k, nc, nc)),
            ("prop_cm", 3, (k, npr, npr)),
            ("class_cm_pooled", 2, (nc, nc)),
            ("prop_cm_pooled", 2, (npr, npr)),
        ):
            arr = _frozen(getattr(self, name), name, ndim)
            if arr.shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
            object.__setattr__(self, name, arr)
        if self.clusters is not None and self.clusters.class_cm.shape[1:] != (k, nc, nc):
            raise ValueError(f"clusters: class counts {self.clusters.class_cm.shape[1:]} differ from {(k, nc, nc)}")

    @property
    def classes(self) -> tuple[str, ...]:
        """The evaluation classes without the trailing ``empty`` label."""
        return self.class_labels[:-1]

    @property
    def empty_label(self) -> str:
        """The auxiliary label (Remark 1), always the last class and proposition label."""
        return self.class_labels[-1]

    @property
    def n_bins(self) -> int:
        return len(self.bin_edges)

    def labels(self, kind: Kind) -> tuple[str, ...]:
        """``class_labels`` or ``prop_labels``."""
        return self.class_labels if kind == "class" else self.prop_labels

    def counts(self, kind: Kind, pooled: bool = False) -> np.ndarray:
        """Counts ``[bin, pred, true]`` (or ``[pred, true]`` when pooled) of one matrix type."""
        if kind == "class":
            return self.class_cm_pooled if pooled else self.class_cm
        if kind == "prop":
            return self.prop_cm_pooled if pooled else self.prop_cm
        raise ValueError(f"kind must be 'class' or 'prop', got {kind!r}")

    def probabilities(self, kind: Kind, pooled: bool = False, empty_column: EmptyColumn = "zeros") -> np.ndarray:
        """μ_k as ``P(pred | true)``: column-normalised counts per bin (eqs. 5, 8), or pooled."""
        return column_normalize(self.counts(kind, pooled), empty_column)

    def label_index(self, kind: Kind, label: str) -> int:
        """Row/column index of ``label``; ``"obs,ped"`` finds ``"ped,obs"`` (set semantics)."""
        labels = self.labels(kind)
        if label in labels:
            return labels.index(label)
        wanted = frozenset(p.strip() for p in label.split(","))
        for i, lab in enumerate(labels):
            if frozenset(lab.split(",")) == wanted:
                return i
        raise KeyError(f"{kind} label {label!r} not in {list(labels)}")

    def bin_for_distance(self, distance: float) -> int | None:
        """Index of the bin ``[lo, hi)`` holding ``distance`` or None when outside all bins."""
        for i, (lo, hi) in enumerate(self.bin_edges):
            if lo <= distance < hi:
                return i
        return None
