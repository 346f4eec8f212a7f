"""Variance segments between change points (PCD paper, eq. 5-8): change points supplied by the user, the
per-segment sigma (paper: RMS of the spline residuals; reference: ``std(y)`` of the raw segment) and the
segment index of any distance."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perception_safety.evaluation.pcd.changepoints import ChangePoints, cell_squares
from perception_safety.evaluation.pcd.config import Method
from perception_safety.evaluation.pcd.errors import PCDError


@dataclass(frozen=True)
class Segment:
    """One variance segment: distance bounds, sample count and its sigma."""

    lo_m: float
    hi_m: float
    n: int
    sigma: float


def segments_paper(
    x: np.ndarray,
    resid: np.ndarray,
    cps: ChangePoints,
    counts: np.ndarray | None = None,
    within: np.ndarray | None = None,
) -> tuple[np.ndarray, list[Segment]]:
    """Sigma of each segment: the RMS of its residuals (``counts``/``within``: cells of samples, `cell_squares`)."""
    bounds = [0, *cps.split_indices, x.size]
    sigma = np.empty(x.size)
    segs = []
    sq = None if counts is None else cell_squares(resid, counts, within if within is not None else 0.0)
    for lo, hi in itertools.pairwise(bounds):
        if sq is None:
            s, size = float(np.sqrt(np.mean(np.square(resid[lo:hi])))), hi - lo
        else:
            size = round(float(counts[lo:hi].sum()))
            s = float(np.sqrt(np.sum(sq[lo:hi]) / size))
        sigma[lo:hi] = s
        segs.append(Segment(float(x[lo]), float(x[hi - 1]), size, s))
    return sigma, segs


def segments_reference(x: np.ndarray, y: np.ndarray, cps: ChangePoints) -> tuple[np.ndarray, list[Segment]]:
    c = list(cps.distances)
    if not c:
        s = float(np.std(y))
        return np.full(x.size, s), [Segment(float(x[0]), float(x[-1]), x.size, s)]
    masks = [x <= c[0]]
    masks += [(x >= a) & (x <= b) for a, b in itertools.pairwise(c)]
    masks.append(x >= c[-1])
    sigma = np.full(x.size, np.nan)
    segs = []
    for mask in masks:
        if not mask.any():
            continue
        s = float(np.std(y[mask]))
        sigma[mask] = s  # later segments overwrite shared boundary samples, as the reference does
        segs.append(Segment(float(x[mask][0]), float(x[mask][-1]), int(mask.sum()), s))
    return sigma, segs


def given_change_points(x: np.ndarray, distances: Sequence[float], method: Method) -> ChangePoints:
    """Change points supplied by the user (distances), as the segmentation of sorted ``x`` would report them.

    Paper: a change point is the last distance of its left segment; reference: the first of its right one.
    """
    values = sorted(float(d) for d in distances)
    if not all(np.isfinite(values)):
        raise PCDError("change points must be finite distances")
    side = "right" if method == "paper" else "left"
    cuts = sorted({int(np.searchsorted(x, v, side=side)) for v in values} - {0, x.size})
    return ChangePoints(split_indices=tuple(cuts), distances=tuple(values), tests=())


def segment_of(x: np.ndarray, cps: ChangePoints) -> np.ndarray:
    """Variance segment index of each distance (a change point is the last distance of its left segment)."""
    return np.searchsorted(np.asarray(cps.distances, dtype=float), x, side="left")
