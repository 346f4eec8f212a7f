"""The bootstrap's resamples as counts: samples pooled per resampling unit and distance cell, and the PCD estimate
(paper method) on the pooled samples of one resample.

A resample of whole units (tracks, episodes) is fully described by how often it drew each unit, so everything the
estimate needs — counts, detected counts, sums of scores and of squared scores per distance cell — is one sparse
product of the draw counts with a (unit × cell) table built once (issue 27 target 3). The estimate on the cells is
the estimate on the cells' samples: weighted P-spline and logistic fits give the same normal equations, the
change-point test's sums over samples become sums over cells (splits fall between distinct distances, as on the
samples), sigma is the RMS of the same residuals, and PCD is the largest distance meeting ``p_t`` (eq. 10).

Cells are the distinct distances of the data when there are at most ``max_cells`` of them (then the estimate is the
same as on the resampled samples, to rounding). Otherwise they are ``max_cells`` equal-width distance bins, each
at the mean distance of its samples: the resamples' estimate is then that of the data with distances rounded to a
grid of (range / max_cells) — 2.4 cm for 200 m at the default — recorded with the interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.pcd.errors import PCDError
from perception_safety.evaluation.pcd.fit import CellSums, fit_score_model
from perception_safety.evaluation.pcd.grid import model_probabilities, pcd_from_probabilities
from perception_safety.evaluation.pcd.logistic import fit_logistic_pspline
from perception_safety.evaluation.pcd.pspline import SplineFitError, fitted_values
from perception_safety.evaluation.pcd.segments import segment_of

#: More distinct distances than this are pooled in this many equal-width cells.
MAX_CELLS = 8192
#: Per cell: samples, detected samples, sum and sum of squares of all scores and of the detected scores.
STATS = ("n", "detected", "sum", "sum_sq", "sum_det", "sum_sq_det")
#: A cell's sum of squares about its mean below this share of its sum of squares is rounding (one sample drawn
#: several times), not spread.
WITHIN_RELATIVE = 1e-9


@dataclass(frozen=True)
class CellTable:
    """Per resampling unit and distance cell the `STATS`, as a sparse (len(STATS) * cells) x units matrix."""

    x: np.ndarray  # distance of each cell, ascending
    by_unit: sparse.csr_matrix  # row s * cells + c: statistic s of cell c; column: the unit
    y_scale: np.ndarray  # per unit: the largest |y| of all its samples, of its detected samples
    width_m: float  # 0: cells are the distinct distances; else the bin width

    @property
    def n_cells(self) -> int:
        return int(self.x.size)

    def resample(self, draws: np.ndarray) -> np.ndarray:
        """`STATS` per cell of each resample: ``draws`` (resamples x units) counts how often each unit was drawn;
        returns (resamples, len(STATS), cells)."""
        out = self.by_unit @ np.asarray(draws, dtype=float).T
        return np.asarray(out).T.reshape(draws.shape[0], len(STATS), self.n_cells)


def cell_table(x: np.ndarray, y: np.ndarray, unit: np.ndarray, n_units: int, max_cells: int | None = None) -> CellTable:
    """Pool samples ``(x, y)`` of units ``unit`` (0..n_units-1) in distance cells (see the module docstring;
    ``max_cells`` defaults to `MAX_CELLS`)."""
    max_cells = max_cells or MAX_CELLS
    distinct = np.unique(x)
    if distinct.size <= max_cells:
        cell, centres, width = np.searchsorted(distinct, x), distinct, 0.0
    else:
        lo, hi = float(distinct[0]), float(distinct[-1])
        width = (hi - lo) / max_cells
        raw = np.minimum(((x - lo) / width).astype(np.int64), max_cells - 1)
        _, cell = np.unique(raw, return_inverse=True)
        centres = np.bincount(cell, weights=x) / np.bincount(cell)
    m = centres.size
    det = y > 0
    key = unit.astype(np.int64) * m + cell
    keys, pair = np.unique(key, return_inverse=True)
    values = [np.ones_like(y), det.astype(float), y, y * y, np.where(det, y, 0.0), np.where(det, y * y, 0.0)]
    sums = [np.bincount(pair, weights=v, minlength=keys.size) for v in values]
    rows = np.concatenate([s * m + keys % m for s in range(len(STATS))])
    by_unit = sparse.csr_matrix(
        (np.concatenate(sums), (rows, np.tile(keys // m, len(STATS)))), shape=(len(STATS) * m, n_units)
    )
    y_abs = np.zeros((2, n_units))
    np.maximum.at(y_abs[0], unit, np.abs(y))
    np.maximum.at(y_abs[1], unit[det], np.abs(y[det]))
    return CellTable(centres.astype(float), by_unit, y_abs, width)


def within_squares(total: np.ndarray, sum_sq: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sum of squares about the cell mean, ``S2 - S1^2 / n``, with rounding of a single repeated value set to 0."""
    w = sum_sq - total * total / n
    return np.where(w > WITHIN_RELATIVE * sum_sq, w, 0.0)


def cell_estimate(
    table: CellTable, stats: np.ndarray, y_scale: tuple[float, float], cfg: PCDConfig, model: str,
    start: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """PCD(y_t, p_t) and the PCD grid of one resample's cells (``stats``: `STATS` x cells), paper method, with the
    score model fixed to ``model`` (its hurdle fallbacks as in `compute.compute_pcd`); raises `PCDError` like it."""
    keep = stats[0] > 0
    x = table.x[keep]
    n, det_n, total, sum_sq, total_d, sum_sq_d = stats[:, keep]
    n_all = float(n.sum())
    if n_all < cfg.n_splines:
        raise PCDError(f"bootstrap resample: {n_all:g} samples are fewer than the {cfg.n_splines} spline functions")
    if x.size < 2:
        raise PCDError("bootstrap resample: all samples share one distance")
    n_zero = n_all - float(det_n.sum())
    det = det_n > 0
    hurdle = model == "hurdle" and not (det_n.sum() < cfg.n_splines or np.count_nonzero(det) < 2 or n_zero == 0)
    p_det = None
    try:
        if hurdle:
            p_det = fit_logistic_pspline(
                x, det_n / n, lam=cfg.lam, n_splines=cfg.n_splines, degree=cfg.spline_degree,
                penalty_order=cfg.penalty_order, criterion=cfg.lam_selection, lam_grid=cfg.lam_grid, start=start,
                trials=n,
            ).predict(x)
            cnt, tot = det_n[det], total_d[det]
            cells = CellSums(cnt, within_squares(tot, sum_sq_d[det], cnt), y_scale[1])
            sm = fit_score_model(x[det], tot / cnt, cfg, "bootstrap resample", None, cells)
            sigma = np.array([s.sigma for s in sm.segments])[segment_of(x, sm.cps)]
        else:
            cells = CellSums(n, within_squares(total, sum_sq, n), y_scale[0])
            sm = fit_score_model(x, total / n, cfg, "bootstrap resample", None, cells)
            sigma = sm.sigma
    except SplineFitError as exc:
        raise PCDError(f"bootstrap resample: {exc}") from exc
    fitted = fitted_values(sm.fit, x)
    grid_prob = model_probabilities(fitted, sigma, p_det, np.array(cfg.grid_y_t), cfg.method)
    point_prob = model_probabilities(fitted, sigma, p_det, np.array([cfg.y_t]), cfg.method)
    grid, _ = pcd_from_probabilities(x, grid_prob, np.array(cfg.grid_p_t), cfg.method)
    point, _ = pcd_from_probabilities(x, point_prob, np.array([cfg.p_t]), cfg.method)
    return float(point[0, 0]), grid
