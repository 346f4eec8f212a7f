"""How sure each estimated proportion of a confusion matrix is: intervals per entry and thin columns.

Every ``P(pred | true)`` entry (eqs. 5, 8) is ``k`` of ``n`` with ``n`` the column sum; its two-sided
Clopper-Pearson interval at level ``1 - alpha`` comes from `perception_safety.evaluation.intervals`, the
same function the interval Markov chain uses. A column (true label in one bin) with fewer than
``min_samples`` samples is a *thin column*: its proportions are reported, but flagged, never used silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.types import DistanceConfusion, Kind
from perception_safety.evaluation.intervals import clopper_pearson


def entry_intervals(cm: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson ``(lower, upper)`` of every ``P(pred | true) = cm[.., pred, true] / column sum``.

    Works on ``[pred, true]`` or ``[bin, pred, true]`` counts; a column without samples gets ``[0, 1]``.
    """
    cm = np.asarray(cm, dtype=np.int64)
    n = np.broadcast_to(cm.sum(axis=-2, keepdims=True), cm.shape)
    return clopper_pearson(cm, n, alpha)


@dataclass(frozen=True)
class ThinColumn:
    """One column (true label of one bin, or pooled) with fewer samples than ``min_samples``."""

    matrix: Kind
    bin: str
    lo: float
    hi: float
    label: str
    n: int


def thin_columns(dc: DistanceConfusion, min_samples: int) -> list[ThinColumn]:
    """Every column of both matrix types, per bin and pooled, whose sample count is below ``min_samples``."""
    out: list[ThinColumn] = []
    for kind in ("class", "prop"):
        labels = dc.labels(kind)
        blocks = [(str(k), lo, hi, dc.counts(kind)[k]) for k, (lo, hi) in enumerate(dc.bin_edges)]
        blocks.append(("pooled", dc.bin_edges[0][0], dc.bin_edges[-1][1], dc.counts(kind, pooled=True)))
        for name, lo, hi, cm in blocks:
            sums = cm.sum(axis=0)
            for j in np.flatnonzero(sums < min_samples).tolist():
                out.append(ThinColumn(kind, name, lo, hi, labels[j], int(sums[j])))
    return out


def thin_column_messages(columns: list[ThinColumn], min_samples: int) -> list[str]:
    """One warning line per matrix type: which columns are thin (``n = 0``: no estimate at all)."""
    lines = []
    for kind in ("class", "prop"):
        cols = [c for c in columns if c.matrix == kind]
        if not cols:
            continue
        where = ", ".join(
            f"{c.label} in {'pooled' if c.bin == 'pooled' else f'[{c.lo:g}, {c.hi:g})'} (n = {c.n})" for c in cols
        )
        empty = sum(c.n == 0 for c in cols)
        lines.append(
            f"{kind}-labeled matrix: {len(cols)} column(s) with fewer than {min_samples} samples "
            f"({empty} without any; their P(pred | true) is undefined and set by empty_column), "
            f"intervals there are wide: {where}"
        )
    return lines


def thin_columns_to_json(columns: list[ThinColumn]) -> list[dict[str, Any]]:
    return [asdict(c) for c in columns]
