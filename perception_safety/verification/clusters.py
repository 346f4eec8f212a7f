"""Per-column design effects of clustered confusion counts: the episode (or track) as the independent unit.

Frames of one episode are correlated, so a column of ``n`` frame counts carries less information than ``n``
independent looks. For counts per cluster ``clusters[c, bin, pred, true]`` this module estimates, per
``(bin, true)`` column, Kish's design effect of the column's proportions: the cluster-robust (linearised
ratio-estimator) variance ``C/(C−1) Σ_c (k_c − p n_c)² / N²`` over the binomial one ``p(1−p)/N``, summed over
the column's cells (a trace ratio, equal to the binary design effect for two cells), floored at 1. A column
without variation (every frame in one cell) gives no estimate: the cluster is then taken as the unit
(``deff = Σ n_c² / N``, i.e. ICC 1). The effective counts are ``counts / deff``; the Korn–Graubard
degrees-of-freedom factor ``(z / t_{C−1})²`` shrinks them further for few clusters (applied in `counted`).

Without cluster information the caller never calls this module: bare count matrices keep the plain binomial
intervals exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, t


@dataclass(frozen=True)
class ColumnDesign:
    """Per ``[bin, true]``: design effect (≥ 1), clusters with frames in the column, frames, and whether the
    design effect was estimated from variation (``estimated``) or taken as ICC 1 (no variation to estimate
    from)."""

    deff: np.ndarray
    clusters: np.ndarray
    frames: np.ndarray
    estimated: np.ndarray


def column_design(clusters: np.ndarray) -> ColumnDesign:
    """`ColumnDesign` of counts ``clusters[c, bin, pred, true]`` (vectorised over bins and columns)."""
    x = np.asarray(clusters, dtype=np.float64)
    n_c = x.sum(axis=2)  # [c, bin, true]
    total = n_c.sum(axis=0)  # [bin, true]
    k = x.sum(axis=0)  # [bin, pred, true]
    c_used = (n_c > 0).sum(axis=0)  # [bin, true]
    p = np.divide(k, total[:, None, :], out=np.zeros_like(k), where=total[:, None, :] > 0)
    resid = x - p[None] * n_c[:, :, None, :]
    scale = np.divide(c_used, c_used - 1.0, out=np.zeros(c_used.shape), where=c_used > 1)
    v = scale * (resid ** 2).sum(axis=(0, 2))  # Σ over cells of N² · var_cluster
    v0 = (k * (1.0 - p)).sum(axis=1)  # Σ over cells of N² · var_binomial = N Σ p(1−p)
    estimated = (v0 > 0) & (c_used > 1)
    icc1 = np.divide((n_c ** 2).sum(axis=0), total, out=np.ones(total.shape), where=total > 0)
    deff = np.where(estimated, np.divide(v, v0, out=np.ones(v.shape), where=v0 > 0), icc1)
    return ColumnDesign(deff=np.maximum(deff, 1.0), clusters=c_used, frames=total, estimated=estimated)


def df_factor(clusters: np.ndarray, alpha: float) -> np.ndarray:
    """Korn–Graubard ``(z_{1−α/2} / t_{C−1, 1−α/2})²`` (≤ 1) per column; 0 where fewer than 2 clusters."""
    c = np.asarray(clusters, dtype=np.float64)
    z = norm.ppf(1 - alpha / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = t.ppf(1 - alpha / 2, np.maximum(c - 1, 1))
    return np.where(c >= 2, (z / tq) ** 2, 0.0)
