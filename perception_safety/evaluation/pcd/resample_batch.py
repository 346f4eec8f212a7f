"""The paper method's PCD estimate on the cells of many bootstrap resamples at once (issue 27: 200 resamples cost
about as much as a few fits instead of 200 fits of ~10 small P-splines each).

Per resample the estimate is `cells.cell_estimate`'s: the logistic P-spline ``p_det`` (hurdle model, penalised
IRLS from the full data's coefficients, each resample stopping at its own iteration), the P-spline mean (eq. 2-4),
the variance change points by binary segmentation with the SIC test (eq. 5-8), sigma per segment, and PCD/mPCD
(eq. 9-10). Here every step runs for all resamples (and, in the segmentation, all segments under test) together:
each round of the segmentation evaluates one B-spline design matrix for the cells of every open segment, forms
all their normal equations (products summed per knot span by `reduceat`, placed by `bincount`) and solves them in
one batched solve. The arithmetic is the same up to the order of floating-point sums (the K x K normal equations
are summed per cell instead of by BLAS), so fitted values agree to ~1e-15; a threshold comparison can only flip in
a knife-edge case, which the tests bound.
Fixed ``lam`` only (``lam_selection`` aic/bic/gcv keep the per-resample path).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln

from perception_safety.evaluation.pcd.cells import CellTable, within_squares
from perception_safety.evaluation.pcd.changepoints import cell_squares, critical_value
from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.pcd.grid import model_probabilities
from perception_safety.evaluation.pcd.logistic import ETA_LIMIT, RIDGE
from perception_safety.evaluation.pcd.pspline import difference_penalty, uniform_knots

#: The exact-fit floor of the change-point test (`changepoints.binary_segmentation`'s default ``exact_fit_tol``).
EXACT_FIT_TOL = 1e-10
#: IRLS of the logistic P-spline: `logistic.fit_logistic_pspline`'s defaults.
MAX_ITER, TOL = 50, 1e-9


@dataclass(frozen=True)
class Rows:
    """Cells of many systems laid end to end (system by system, distances ascending): ``system[i]`` owns row ``i``,
    whose B-spline basis is non-zero on columns ``span[i] .. span[i] + degree`` with values ``values[:, i]``
    (degree + 1 x rows: each basis column contiguous); ``col = system * K + span`` (the row's first coefficient in
    the systems' flattened coefficients)."""

    system: np.ndarray
    span: np.ndarray
    values: np.ndarray
    col: np.ndarray

    def apply(self, coef: np.ndarray) -> np.ndarray:
        """``f`` at every row: basis values times the row's system's coefficients (``coef``: systems x K), summed in
        column order as scipy's sparse product does."""
        flat = coef.ravel()
        out = self.values[0] * flat[self.col]
        for a in range(1, len(self.values)):
            out = out + self.values[a] * flat[self.col + a]
        return out

    def subset(self, mask: np.ndarray) -> Rows:
        return Rows(self.system[mask], self.span[mask], self.values[:, mask], self.col[mask])


def basis_rows(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, system: np.ndarray, cfg: PCDConfig) -> Rows:
    """The basis of each row at ``x`` on its system's range ``[lo, hi]`` (``lo``/``hi`` per row), as `pspline` maps
    distances to the unit interval (one scipy design-matrix call for all rows)."""
    from scipy.interpolate import BSpline  # ~0.15 s to import: loaded when a bootstrap runs, as in `pspline`

    scale = np.where(hi != lo, hi - lo, 1.0)
    u = np.clip((x - lo) / scale, 0.0, 1.0)
    d1 = cfg.spline_degree + 1
    m = BSpline.design_matrix(u, uniform_knots(cfg.n_splines, cfg.spline_degree, 0.0), cfg.spline_degree,
                              extrapolate=True)  # fmt: skip
    span = m.indices.reshape(-1, d1)[:, 0].astype(np.int64)
    return Rows(system, span, np.ascontiguousarray(m.data.reshape(-1, d1).T), system * cfg.n_splines + span)


def normal_equations(rows: Rows, w: np.ndarray, z: np.ndarray, systems: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(B'WB, B'Wz)`` of every system (systems x K x K, systems x K): the rows' products summed per (system, span)
    run of rows, then placed in their systems' matrices."""
    d1 = len(rows.values)
    gram, rhs = np.zeros(systems * k * k), np.zeros(systems * k)
    if not rows.col.size:
        return gram.reshape(systems, k, k), rhs.reshape(systems, k)
    a, b = np.triu_indices(d1)
    wv = rows.values * w
    products = np.empty((a.size + d1, rows.col.size))
    for i, (ai, bi) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        np.multiply(wv[ai], rows.values[bi], out=products[i])
    np.multiply(wv, z, out=products[a.size :])
    starts = np.flatnonzero(np.r_[True, rows.col[1:] != rows.col[:-1]])
    sums = np.add.reduceat(products, starts, axis=1)
    col = rows.col[starts]
    first = col * k + (col % k)  # flat index of (span, span) in the system's matrix: system * K^2 + span * (K + 1)
    upper = sums[: a.size]
    gram += np.bincount((first + (a * k + b)[:, None]).ravel(), upper.ravel(), systems * k * k)
    gram += np.bincount((first + (b * k + a)[:, None])[a != b].ravel(), upper[a != b].ravel(), systems * k * k)
    rhs += np.bincount((col + np.arange(d1)[:, None]).ravel(), sums[a.size :].ravel(), systems * k)
    return gram.reshape(systems, k, k), rhs.reshape(systems, k)


def solve_each(a: np.ndarray, rhs: np.ndarray, positive: bool) -> tuple[np.ndarray, np.ndarray]:
    """Solutions of the systems ``a x = rhs`` and which could be solved (``positive``: only positive-definite ones,
    as the P-spline's Cholesky solve; else non-singular ones, as the IRLS's LU solve)."""
    ok = np.ones(len(a), dtype=bool)
    try:
        if positive:
            np.linalg.cholesky(a)
        return np.linalg.solve(a, rhs[..., None])[..., 0], ok
    except np.linalg.LinAlgError:
        out = np.zeros_like(rhs)
        for i in range(len(a)):
            try:
                if positive:
                    np.linalg.cholesky(a[i])
                out[i] = np.linalg.solve(a[i], rhs[i])
            except np.linalg.LinAlgError:
                ok[i] = False
        return out, ok


def logistic_p_det(
    x: np.ndarray, system: np.ndarray, lo: np.ndarray, hi: np.ndarray, share: np.ndarray, trials: np.ndarray,
    systems: int, cfg: PCDConfig, start: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """``p_det`` at every row (cells of ``systems`` resamples, detected ``share`` of ``trials`` samples) by penalised
    IRLS (`logistic._irls`, each system stopping at its own iteration), and which systems could be fitted."""
    k = cfg.n_splines
    rows = basis_rows(x, lo[system], hi[system], system, cfg)
    penalty = cfg.lam * difference_penalty(k, cfg.penalty_order) + RIDGE * np.eye(k)
    if start is not None and np.shape(start) == (k,):
        beta = np.tile(np.asarray(start, dtype=float), (systems, 1))
    else:
        rate = (np.bincount(system, trials * share, systems) + 0.5) / (np.bincount(system, trials, systems) + 1.0)
        beta = np.repeat(np.log(rate / (1.0 - rate))[:, None], k, axis=1)
    ok = np.ones(systems, dtype=bool)
    active = np.ones(systems, dtype=bool)
    dev_old = np.full(systems, np.inf)
    live, y, t = rows, share, trials
    eta = np.clip(live.apply(beta), -ETA_LIMIT, ETA_LIMIT)
    p = expit(eta)
    for _ in range(MAX_ITER):
        w = np.maximum(p * (1.0 - p), 1e-10)
        gram, rhs = normal_equations(live, w * t, eta + (y - p) / w, systems, k)
        idx = np.flatnonzero(active)
        new, solved = solve_each(gram[idx] + penalty, rhs[idx], positive=False)
        ok[idx[~solved]] = False
        beta[idx] = new
        eta = np.clip(live.apply(beta), -ETA_LIMIT, ETA_LIMIT)  # also the next iteration's, as `_irls` recomputes it
        p = expit(eta)
        q = np.clip(p, 1e-15, 1.0 - 1e-15)
        dev = -2.0 * np.bincount(live.system, t * (y * np.log(q) + (1.0 - y) * np.log1p(-q)), systems)
        done = np.abs(dev - dev_old) <= TOL * (np.abs(dev) + 0.1)
        dev_old = np.where(active, dev, dev_old)
        active &= ~done & ok
        if not active.any():
            break
        keep = active[live.system]
        if not keep.all():
            live, y, t, eta, p = live.subset(keep), y[keep], t[keep], eta[keep], p[keep]
    return expit(np.clip(rows.apply(beta), -ETA_LIMIT, ETA_LIMIT)), ok


@dataclass(frozen=True)
class Cells:
    """The cells the Gaussian part is fitted to, of all resamples end to end (``first[r]`` the first of resample
    ``r``, ``first[-1]`` the total): distance, samples, mean score, sum of squares about the mean."""

    x: np.ndarray
    counts: np.ndarray
    means: np.ndarray
    within: np.ndarray
    first: np.ndarray


def score_model(
    cells: Cells, floor: np.ndarray, cfg: PCDConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian part of every resample (`fit.fit_score_model`, paper rule, on cells): the full fit's
    coefficients, its residual per cell, the cuts (first cell of each right part, into the cells end to end) and
    which resamples could be fitted. ``floor`` per resample: the test's exact-fit floor, (tol x max(1, max|y|))^2.

    Rounds: the first fits every resample's cells (the full fit, whose residuals the root test reads); each later
    one refits the children of the segments that rejected H0 (segments too small to test are not fitted, as in
    `changepoints.binary_segmentation`)."""
    k = cfg.n_splines
    n_res = cells.first.size - 1
    penalty = cfg.lam * difference_penalty(k, cfg.penalty_order)
    min_size = max(cfg.segment_minimum(), cfg.n_splines, 3)
    cum = np.concatenate([[0.0], np.cumsum(cells.counts)])
    cuts: list[np.ndarray] = []
    ok = np.ones(n_res, dtype=bool)
    coef = np.zeros((n_res, k))
    resid = np.zeros(cells.x.size)
    lo, hi, seg_r = cells.first[:-1], cells.first[1:], np.arange(n_res)
    root = True
    while lo.size:
        if not root:  # too small to test, or one distance only: not refitted
            keep = ok[seg_r] & (cum[hi] - cum[lo] >= min_size) & (cells.x[lo] != cells.x[hi - 1])
            lo, hi, seg_r = lo[keep], hi[keep], seg_r[keep]
            if not lo.size:
                break
        size = hi - lo
        starts = np.concatenate([[0], np.cumsum(size)[:-1]])
        row = np.repeat(lo - starts, size) + np.arange(int(size.sum()))
        seg = np.repeat(np.arange(lo.size), size)
        rows = basis_rows(cells.x[row], cells.x[lo][seg], cells.x[hi - 1][seg], seg, cfg)
        gram, rhs = normal_equations(rows, cells.counts[row], cells.means[row], lo.size, k)
        beta, solved = solve_each(gram + penalty, rhs, positive=True)
        ok[seg_r[~solved]] = False
        r_seg = cells.means[row] - rows.apply(beta)
        if root:  # the full fit: its residuals give sigma, its coefficients the mean
            coef[seg_r], resid[row] = beta, r_seg
        sq = cell_squares(r_seg, cells.counts[row], cells.within[row])
        n = cum[hi] - cum[lo]
        total = np.add.reduceat(sq, starts)
        test = ok[seg_r] & (n >= min_size) & (cells.x[lo] != cells.x[hi - 1]) & (total / n > floor[seg_r])
        cut, parent = _sic_splits(lo, size, n, total, floor[seg_r], test, sq, starts, cum, cfg)
        cuts.append(cut)
        lo, hi = np.concatenate([lo[parent], cut]), np.concatenate([cut, hi[parent]])
        seg_r = np.concatenate([seg_r[parent], seg_r[parent]])
        order = np.argsort(lo, kind="stable")
        lo, hi, seg_r, root = lo[order], hi[order], seg_r[order], False
    return coef, resid, np.concatenate(cuts) if cuts else np.zeros(0, dtype=np.int64), ok


def _sic_splits(
    lo: np.ndarray, size: np.ndarray, n: np.ndarray, total: np.ndarray, floor: np.ndarray, test: np.ndarray,
    sq: np.ndarray, starts: np.ndarray, cum: np.ndarray, cfg: PCDConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """The SIC test (eq. 6-8, paper rule, on cells; `changepoints.sic_split_test`) on the segments marked ``test``
    (``sq``: each cell's squared residuals, segments end to end from ``starts``): the cut (first cell of the right
    part) and the segment of each that rejects H0. Sums run per segment from its own start, as there."""
    idx = np.flatnonzero(test)
    bucket = np.ceil(np.log2(np.maximum(size[idx], 1))).astype(np.int64)  # padded to at most twice their size
    cuts, parents = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for b in np.unique(bucket).tolist():
        cut, parent = _sic_bucket(lo, size, n, total, floor, idx[bucket == b], sq, starts, cum, cfg)
        cuts.append(cut)
        parents.append(parent)
    return np.concatenate(cuts), np.concatenate(parents)


def _sic_bucket(
    lo: np.ndarray, size: np.ndarray, n: np.ndarray, total: np.ndarray, floor: np.ndarray, idx: np.ndarray,
    sq: np.ndarray, starts: np.ndarray, cum: np.ndarray, cfg: PCDConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """`_sic_splits` on segments ``idx`` of similar size, side by side in one padded array."""
    width = int(size[idx].max())
    pos = np.arange(width)
    inside = pos[None, :] < size[idx, None]
    at = (starts[idx, None] + pos)[inside]
    grid_sq = np.zeros((idx.size, width))
    grid_sq[inside] = sq[at]
    cell = (lo[idx, None] + pos)[inside]
    grid_n = np.zeros((idx.size, width))
    grid_n[inside] = cum[cell + 1] - cum[cell]
    left = np.cumsum(grid_sq, axis=1)[:, :-1]
    right = np.cumsum(grid_sq[:, ::-1], axis=1)[:, ::-1][:, 1:]
    tau = np.cumsum(grid_n, axis=1)[:, :-1]
    nn, fl = n[idx, None], floor[idx, None]
    min_side = cfg.side_minimum()
    cand = inside[:, 1:] & (tau >= min_side) & (nn - tau >= min_side)
    with np.errstate(divide="ignore", invalid="ignore"):
        lik = tau * np.log(np.maximum(left / tau, fl)) + (nn - tau) * np.log(np.maximum(right / (nn - tau), fl))
    lik = np.where(cand, lik, np.inf)
    best = np.argmin(lik, axis=1) if width > 1 else np.zeros(idx.size, dtype=np.int64)
    l_min = lik[np.arange(idx.size), best] if width > 1 else np.full(idx.size, np.inf)
    m = n[idx]
    l_full = m * np.log(np.maximum(total[idx] / m, floor[idx]))
    ln = np.log(m)
    lln = np.log(ln)
    a_n, b_n = np.sqrt(2.0 * lln) / ln, (2.0 * lln + 0.5 * np.log(lln) - gammaln(0.5)) / ln
    stat = a_n * ln * np.sqrt(np.maximum(l_full - l_min, 0.0)) - b_n * ln
    reject = cand.any(axis=1) & (stat > critical_value(cfg.alpha, "paper"))
    return lo[idx[reject]] + best[reject] + 1, idx[reject]


def _flat(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (resample, cell) of ``mask`` (resamples x cells), resample by resample, and each resample's first row."""
    r, c = np.nonzero(mask)
    first = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])
    return r, c, first


def estimate_resamples(
    table: CellTable, stats: np.ndarray, y_scale: np.ndarray, cfg: PCDConfig, model: str, start: np.ndarray | None
) -> list[tuple[float, np.ndarray] | None]:
    """`cells.cell_estimate` of every resample (``stats``: resamples x `STATS` x cells; ``y_scale``: resamples x 2,
    the largest |y| of all and of the detected samples drawn): ``(PCD, grid)`` per resample, None where the
    estimate fails (too few samples or distances, a singular fit)."""
    n, det_n, total, sum_sq, total_d, sum_sq_d = np.moveaxis(stats, 1, 0)
    keep = n > 0
    n_all, det_all = n.sum(axis=1), det_n.sum(axis=1)
    fine = (n_all >= cfg.n_splines) & (keep.sum(axis=1) >= 2)
    hurdle = (model == "hurdle") & ~(
        (det_all < cfg.n_splines) | ((det_n > 0).sum(axis=1) < 2) | (n_all - det_all == 0)
    )
    kr, kc, kfirst = _flat(keep & fine[:, None])
    xk = table.x[kc]
    lo_k, hi_k = np.zeros(len(stats)), np.zeros(len(stats))
    filled = kfirst[1:] > kfirst[:-1]
    lo_k[filled], hi_k[filled] = xk[kfirst[:-1][filled]], xk[kfirst[1:][filled] - 1]
    p_det = np.full(xk.size, np.nan)
    on = hurdle[kr]
    if on.any():
        systems = np.flatnonzero(hurdle & fine)
        sys_of = np.zeros(len(stats), dtype=np.int64)
        sys_of[systems] = np.arange(systems.size)
        share = det_n[kr[on], kc[on]] / n[kr[on], kc[on]]
        p_det[on], fitted_ok = logistic_p_det(xk[on], sys_of[kr[on]], lo_k[systems], hi_k[systems], share,
                                              n[kr[on], kc[on]], systems.size, cfg, start)  # fmt: skip
        fine[systems[~fitted_ok]] = False
    h = hurdle[:, None]
    mr, mc, mfirst = _flat(np.where(h, det_n > 0, keep) & fine[:, None])
    cnt = np.where(h, det_n, n)[mr, mc]
    tot = np.where(h, total_d, total)[mr, mc]
    cells = Cells(table.x[mc], cnt, tot / cnt, within_squares(tot, np.where(h, sum_sq_d, sum_sq)[mr, mc], cnt),
                  mfirst[np.r_[np.flatnonzero(fine), len(stats)]] if fine.any() else np.zeros(1, np.int64))  # fmt: skip
    systems = np.flatnonzero(fine)  # the resamples of the cells, in order
    scale = np.where(hurdle, y_scale[:, 1], y_scale[:, 0])[systems]
    coef, resid, cuts, fitted_ok = score_model(cells, (EXACT_FIT_TOL * np.maximum(1.0, scale)) ** 2, cfg)
    out: list[tuple[float, np.ndarray] | None] = [None] * len(stats)
    fine[systems[~fitted_ok]] = False
    if not fine.any():
        return out
    # sigma per variance segment: the RMS of the full fit's residuals of its samples (`segments.segments_paper`)
    marker = np.zeros(cells.x.size, dtype=np.int64)
    marker[cells.first[:-1]] = 1
    marker[cuts] += 1
    segment = np.cumsum(marker > 0) - 1
    sq = cell_squares(resid, cells.counts, cells.within)
    sigma_seg = np.sqrt(np.bincount(segment, sq) / np.round(np.bincount(segment, cells.counts)))
    # every kept cell of a fitted resample: the mean, sigma of its segment, p_det (eq. 9)
    sys_of = np.full(len(stats), -1)
    sys_of[systems] = np.arange(systems.size)
    rows = fine[kr]
    s_row = sys_of[kr[rows]]
    m_lo, m_hi = cells.x[cells.first[:-1]], cells.x[cells.first[1:] - 1]
    x_rows = xk[rows]
    fitted = basis_rows(x_rows, m_lo[s_row], m_hi[s_row], s_row, cfg).apply(coef)
    n_cells = table.n_cells
    q = np.searchsorted(mr * n_cells + mc, kr[rows] * n_cells + kc[rows], side="left")
    sigma = sigma_seg[segment[np.minimum(q, cells.first[s_row + 1] - 1)]]
    p_rows = np.where(hurdle[kr[rows]], p_det[rows], 1.0)  # the Gaussian model: P times 1, exactly
    first = np.concatenate([[0], np.cumsum(np.bincount(s_row, minlength=systems.size))])
    grid = largest_distances(x_rows, first, model_probabilities(fitted, sigma, p_rows, np.array(cfg.grid_y_t), "paper"),
                             np.array(cfg.grid_p_t))  # fmt: skip
    point = largest_distances(x_rows, first, model_probabilities(fitted, sigma, p_rows, np.array([cfg.y_t]), "paper"),
                              np.array([cfg.p_t]))  # fmt: skip
    for s, r in enumerate(systems.tolist()):
        if fine[r]:
            out[r] = (float(point[s, 0, 0]), np.ascontiguousarray(grid[s]))  # C order: the mPCD mean sums as before
    return out


def largest_distances(x: np.ndarray, first: np.ndarray, prob: np.ndarray, p_t: np.ndarray) -> np.ndarray:
    """``(systems, rows of prob, len(p_t))``: per system (rows ``first[s]:first[s+1]`` of ``x``, ascending) and row
    of ``prob`` the largest ``x`` with ``prob > p_t`` (eq. 10, paper rule), 0 where none: the count of distances
    whose suffix maximum of ``#{p_t < prob}`` exceeds each threshold's rank, as `grid.pcd_from_probabilities`
    counts suffix maxima of ``prob`` above ``p_t``."""
    order = np.argsort(p_t, kind="stable")
    ranks = np.searchsorted(p_t[order], prob, side="left")  # thresholds below each probability
    systems, levels = first.size - 1, len(p_t) + 1
    size = np.diff(first)
    seg = (np.arange(prob.shape[0])[:, None] * systems + np.repeat(np.arange(systems), size)[None, :]).ravel()
    flat = ranks.ravel()
    shifted = np.maximum.accumulate((flat - levels * seg)[::-1])[::-1] + levels * seg  # suffix maxima per segment
    hist = np.bincount(seg * levels + shifted, minlength=prob.shape[0] * systems * levels)
    above = np.cumsum(hist.reshape(-1, levels)[:, ::-1], axis=1)[:, ::-1][:, 1:]  # rows whose suffix max > rank j
    last = np.tile(first[:-1], prob.shape[0])[:, None] + above - 1
    out = np.where(above > 0, x[np.maximum(last, 0)], 0.0).reshape(prob.shape[0], systems, len(p_t))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return np.moveaxis(out[:, :, inverse], 1, 0)
