"""Bootstrap intervals of PCD(y_t, p_t), the PCD grid and mPCD, resampling whole groups (tracks or episodes).

Frames of one track are strongly correlated (a detector misses in runs), so single frames are not independent
samples: each resample draws as many groups as there are, with replacement, keeps all their samples, and reruns
the whole estimate (spline, change points, sigma, p_det) with the model fixed to the one chosen on the full data.
The interval is the two-sided percentile interval at ``level``; seeded, so a rerun gives the same numbers.

Paper method: a resample is its draw counts per group; its samples enter the estimate through per-cell sums, all
resamples' sums from one sparse product (`cells.py`, issue 27: 200 resamples cost a few fits, not 200). The
reference method reruns `compute_pcd` on each resample's samples.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from perception_safety.evaluation.pcd.cells import cell_estimate, cell_table
from perception_safety.evaluation.pcd.compute import PCDError, PCDInterval, PCDResult, compute_pcd, prepare_samples
from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.pcd.diagnostics import PCDWarning
from perception_safety.evaluation.pcd.resample_batch import estimate_resamples

#: Fewer resampling units than this give a rough interval (warned).
FEW_GROUPS = 10


def _gather(starts: np.ndarray, lengths: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """Indices of the samples of the picked groups (groups are contiguous runs ``starts[g] : starts[g]+len``)."""
    lens = lengths[picks]
    total = int(lens.sum())
    offsets = np.repeat(starts[picks] - np.cumsum(lens) + lens, lens)
    return offsets + np.arange(total)


def _resample_samples(
    xg: np.ndarray, yg: np.ndarray, starts: np.ndarray, lengths: np.ndarray, picks: list[np.ndarray],
    cfg: PCDConfig, result: PCDResult,
) -> tuple[list[float], list[np.ndarray]]:
    """Reference method: the whole estimate rerun on each resample's samples."""
    pcds: list[float] = []
    grids: list[np.ndarray] = []
    for pick in picks:
        idx = _gather(starts, lengths, pick)
        try:
            res = compute_pcd(xg[idx], yg[idx], cfg, what="bootstrap resample", diagnose=False, start=result)
        except PCDError:
            continue
        pcds.append(res.pcd)
        grids.append(res.grid)
    return pcds, grids


#: Resamples whose cell sums are formed by one sparse product (and estimated together): at least this many ...
CHUNK = 8
#: ... or as many as keep resamples x cells at this size.
CHUNK_CELLS = 65_536


def _resample_cells(
    xg: np.ndarray, yg: np.ndarray, unit: np.ndarray, k: int, picks: list[np.ndarray], cfg: PCDConfig,
    start: np.ndarray | None, batched: bool = True,
) -> tuple[list[float], list[np.ndarray], float]:
    """Paper method: each resample's cell sums from its draw counts (`cells.py`), the estimate on the cells — of a
    chunk's resamples at once (`resample_batch.py`; fixed lambda), else (or ``batched=False``) one by one."""
    table = cell_table(xg, yg, unit, k)
    pcds: list[float] = []
    grids: list[np.ndarray] = []
    chunk = max(CHUNK, CHUNK_CELLS // table.n_cells)
    for first in range(0, len(picks), chunk):
        draws = np.stack([np.bincount(p, minlength=k) for p in picks[first : first + chunk]])
        stats = table.resample(draws)
        drawn = draws > 0
        if batched and cfg.lam_selection == "fixed":
            y_scale = np.where(drawn[:, None, :], table.y_scale[None], 0.0).max(axis=2)
            done = [e for e in estimate_resamples(table, stats, y_scale, cfg, cfg.model, start) if e is not None]
            pcds.extend(e[0] for e in done)
            grids.extend(e[1] for e in done)
            continue
        for r in range(draws.shape[0]):
            scale = table.y_scale[:, drawn[r]].max(axis=1)
            try:
                pcd, grid = cell_estimate(table, stats[r], (float(scale[0]), float(scale[1])), cfg, cfg.model, start)
            except PCDError:
                continue
            pcds.append(pcd)
            grids.append(grid)
    return pcds, grids, table.width_m


def bootstrap_pcd(
    result: PCDResult,
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray | None,
    config: PCDConfig | None = None,
    unit: str = "track",
) -> PCDResult:
    """``result`` with its bootstrap interval (and warnings about it) added; ``groups`` labels each sample's
    resampling unit (None: single samples, with a warning that the interval is then too narrow)."""
    cfg = config or PCDConfig()
    bcfg = cfg.bootstrap
    warns = list(result.warnings)
    if bcfg.n_boot == 0:
        return result
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if groups is None:
        groups = np.arange(x.size)
        unit = "sample"
        warns.append(
            PCDWarning(
                "pcd_bootstrap_unit",
                "no track/episode ids: the bootstrap resamples single samples, which ignores the correlation of "
                "frames of one track (the interval is too narrow)",
            )
        )
    groups = np.asarray(groups)
    if groups.shape != x.shape:
        raise PCDError(f"bootstrap: {groups.size} group ids for {x.size} samples")
    prepare_samples(x, y)  # same validation as the estimate
    _, inverse = np.unique(groups, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    xg, yg = x[order], y[order]
    lengths = np.bincount(inverse)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    k = lengths.size
    if k < 2:
        warns.append(
            PCDWarning("pcd_bootstrap_groups", f"one {unit} only: no bootstrap interval (needs at least 2 units)")
        )
        return dataclasses.replace(result, warnings=tuple(warns))
    fixed = cfg.model_copy(update={"model": result.model})
    rng = np.random.default_rng(bcfg.seed)
    picks = [rng.integers(0, k, k) for _ in range(bcfg.n_boot)]
    start = result.logistic.coef if result.logistic is not None else None
    if cfg.method == "paper":
        pcds, grids, width = _resample_cells(xg, yg, np.repeat(np.arange(k), lengths), k, picks, fixed, start)
    else:
        (pcds, grids), width = _resample_samples(xg, yg, starts, lengths, picks, fixed, result), 0.0
    failed = bcfg.n_boot - len(pcds)
    if not pcds:
        warns.append(PCDWarning("pcd_bootstrap_failed", f"all {bcfg.n_boot} bootstrap resamples failed: no interval"))
        return dataclasses.replace(result, warnings=tuple(warns))
    q = [(1.0 - bcfg.level) / 2.0, (1.0 + bcfg.level) / 2.0]
    stack = np.stack(grids)
    pcd_q = np.quantile(np.asarray(pcds), q)
    mpcd_q = np.quantile(stack.mean(axis=(1, 2)), q)
    grid_q = np.quantile(stack, q, axis=0)
    if failed:
        warns.append(
            PCDWarning(
                "pcd_bootstrap_failed",
                f"{failed} of {bcfg.n_boot} bootstrap resamples could not be evaluated (too few samples/distances) "
                "and were left out",
            )
        )
    if k < FEW_GROUPS:
        warns.append(
            PCDWarning(
                "pcd_bootstrap_groups",
                f"only {k} resampling units ({unit}s): the bootstrap interval of PCD/mPCD is rough",
            )
        )
    interval = PCDInterval(
        n_boot=bcfg.n_boot,
        n_ok=len(pcds),
        unit=unit,
        n_groups=k,
        level=bcfg.level,
        seed=bcfg.seed,
        cell_width_m=width,
        pcd_ci=(float(pcd_q[0]), float(pcd_q[1])),
        mpcd_ci=(float(mpcd_q[0]), float(mpcd_q[1])),
        grid_lo=grid_q[0],
        grid_hi=grid_q[1],
    )
    return dataclasses.replace(result, interval=interval, warnings=tuple(warns))
