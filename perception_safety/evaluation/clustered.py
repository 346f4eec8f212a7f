"""Proportions whose samples come in clusters (frames of one episode, of one track): intervals that hold anyway.

Frames of one episode are correlated (the same pedestrian, lit the same way, is missed in runs), so ``k`` of
``n`` frames is not ``n`` independent looks. Given per-cluster successes ``y_i`` of ``m_i`` trials, the
interval is the design-effect-corrected Clopper-Pearson interval of Korn & Graubard (1998):

- ratio estimate ``p = Σy / Σm``; its variance with clusters as the independent unit (linearisation,
  clusters drawn with replacement) ``v = k/(k-1) · Σ (y_i - p·m_i)² / (Σm)²``;
- design effect ``deff = v / (p(1-p)/n)``, floored at 1 (never narrower than the binomial interval);
- effective sample size ``n_eff = n / deff``, shrunk by ``(z_{α/2} / t_{k-1, α/2})²`` because ``v`` itself
  rests on only ``k`` clusters (k-1 degrees of freedom), and never above ``n``;
- Clopper-Pearson with ``p·n_eff`` successes of ``n_eff`` (non-integer Beta parameters).

With ``p`` at 0 or 1 there is no variation to estimate a correlation from: ``deff = 1`` (Korn & Graubard's
convention) and the result says so (`ClusteredProportion.boundary`). The design effect is estimated from the
spread between clusters and misses a rare failure that comes in whole clusters the sample happens not to hold
(p = 0.95, ICC 0.6, 10 clusters: coverage 0.67), so `clustered_proportion` reports the hull of this interval and
the beta-binomial profile-likelihood interval (`betabinomial`), which keeps the all-or-nothing explanation of
the same data; the reported ``effective_n`` is then the binomial n whose Clopper-Pearson interval is as wide on
the wider side. With no cluster information at all
(`plain_proportion`) the result is exactly `clopper_pearson`. The implied intra-cluster correlation
``icc = (deff - 1) / (m_w - 1)`` (``m_w = Σm² / Σm``, the size-weighted mean cluster size) is reported beside
the design effect. Measured coverage: docs/confusion-matrices.md (benchmarks/bench_clustered_coverage.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaincinv, ndtri, stdtrit

from perception_safety.evaluation.betabinomial import profile_interval
from perception_safety.evaluation.intervals import clopper_pearson

MIN_CLUSTERS = 10
"""Default: fewer clusters than this and a requirement on the proportion is INCONCLUSIVE."""
SMALL_EFFECTIVE_FRACTION = 0.5
"""Warn when the effective sample size is below this fraction of the frame count."""
CLUSTERED = "korn-graubard+beta-binomial-profile"
PLAIN = "clopper-pearson"


@dataclass(frozen=True)
class ClusteredProportion:
    """``successes`` of ``trials`` with its interval, and what it rests on (frames, clusters, design effect)."""

    successes: int
    trials: int
    """Frames (or objects in frames): the raw count behind the proportion."""
    clusters: int | None
    """Independent units with at least one trial; None = no cluster information (plain Clopper-Pearson)."""
    point: float | None
    lower: float | None
    upper: float | None
    design_effect: float
    icc: float | None
    effective_n: float
    alpha: float
    method: str
    boundary: bool = False
    """The estimate is 0 or 1: no variation, so the design effect could not be estimated (taken as 1)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def too_few_clusters(self, min_clusters: int = MIN_CLUSTERS) -> bool:
        """True when cluster information exists but holds fewer than ``min_clusters`` clusters."""
        return self.clusters is not None and self.clusters < min_clusters

    def basis(self) -> str:
        """``'900 of 1000 frames, 10 clusters, design effect 1.3 (ICC 0.003), n_eff 750'`` for tables."""
        text = f"{self.successes} of {self.trials}"
        if self.clusters is None:
            return text + ", no cluster information (frames taken as independent)"
        icc = "" if self.icc is None else f" (ICC {self.icc:.3g})"
        return (
            f"{text} in {self.clusters} cluster(s), design effect {self.design_effect:.3g}{icc}, "
            f"effective n {self.effective_n:.1f}"
        )

    def warnings(self, what: str, min_clusters: int = MIN_CLUSTERS) -> list[str]:
        """Why this interval deserves caution, one sentence each (empty when none)."""
        out = []
        if self.clusters is None or self.trials == 0:
            return out
        if self.too_few_clusters(min_clusters):
            out.append(
                f"{what}: only {self.clusters} independent cluster(s) (episodes) behind {self.trials} samples; at "
                f"least {min_clusters} are needed to judge a requirement (INCONCLUSIVE)"
            )
        if self.effective_n < SMALL_EFFECTIVE_FRACTION * self.trials:
            out.append(
                f"{what}: the {self.trials} samples are worth about {self.effective_n:.0f} independent ones (the "
                f"interval's width implies a design effect of {self.trials / max(self.effective_n, 1e-9):.2g} from "
                f"{self.clusters} clusters): the frames are strongly correlated"
            )
        if self.boundary and self.clusters > 1:
            out.append(
                f"{what}: estimate {self.point:g} without a single {'failure' if self.point == 1 else 'success'}: the "
                "correlation between frames cannot be estimated, so the interval allows any (each of the "
                f"{self.clusters} episodes may count as one look)"
            )
        return out


def plain_proportion(successes: int, trials: int, alpha: float = 0.05) -> ClusteredProportion:
    """No cluster information: exactly the Clopper-Pearson interval (``None`` bounds when ``trials == 0``)."""
    k, n = int(successes), int(trials)
    if n <= 0:
        return ClusteredProportion(k, 0, None, None, None, None, 1.0, None, 0.0, alpha, PLAIN)
    lo, hi = clopper_pearson(k, n, alpha)
    return ClusteredProportion(k, n, None, k / n, float(lo), float(hi), 1.0, None, float(n), alpha, PLAIN, k in (0, n))


def design_effect(successes: ArrayLike, trials: ArrayLike, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(deff, icc, clusters)`` over the cluster ``axis`` of per-cluster counts (vectorised over other axes).

    ``deff >= 1`` (1 where the estimate is 0 or 1 or fewer than two clusters have trials); ``icc`` is the
    implied intra-cluster correlation ``(deff - 1) / (m_w - 1)`` (0 where every cluster holds one trial).
    """
    y = np.moveaxis(np.asarray(successes, dtype=np.float64), axis, 0)
    m = np.moveaxis(np.asarray(trials, dtype=np.float64), axis, 0)
    if y.shape != m.shape:
        raise ValueError(f"successes {y.shape} and trials {m.shape} differ in shape")
    if np.any(y < 0) or np.any(y > m):
        raise ValueError("per-cluster counts must satisfy 0 <= successes <= trials")
    n = m.sum(axis=0)
    k = (m > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, y.sum(axis=0) / n, 0.0)
        resid = ((y - p * m) ** 2).sum(axis=0)
        v = np.where(k > 1, k / np.maximum(k - 1, 1) * resid / np.maximum(n, 1) ** 2, 0.0)
        binom = p * (1 - p) / np.maximum(n, 1)
        deff = np.where((binom > 0) & (k > 1), v / np.where(binom > 0, binom, 1.0), 1.0)
        deff = np.maximum(deff, 1.0)
        m_w = np.where(n > 0, (m**2).sum(axis=0) / np.maximum(n, 1), 1.0)
        icc = np.where(m_w > 1, np.minimum((deff - 1) / np.where(m_w > 1, m_w - 1, 1.0), 1.0), 0.0)
    return deff, icc, k


def degrees_of_freedom_factor(clusters: ArrayLike, alpha: float) -> np.ndarray:
    """``(z_{α/2} / t_{k-1, α/2})²``: how much a variance from ``k`` clusters shrinks the effective n (0 for k < 2).

    Quantiles from ``scipy.special`` (``stdtrit``, ``ndtri``: what ``scipy.stats`` t/norm ``ppf`` compute, without
    their per-call argument handling).
    """
    k = np.asarray(clusters, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        t = stdtrit(np.maximum(k - 1, 1), 1 - alpha / 2)
    return np.where(k > 1, (ndtri(1 - alpha / 2) / t) ** 2, 0.0)


def effective_counts(
    successes: ArrayLike, trials: ArrayLike, alpha: float = 0.05, axis: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x_eff, n_eff, deff)``: per-cluster counts reduced to the binomial counts worth as much (Korn-Graubard).

    ``n_eff = n / deff · (z/t_{k-1})²`` (at most ``n``), ``x_eff = p · n_eff``; feed them to `clopper_pearson`
    (or to any binomial method) in place of the frame counts. One cluster gives ``n_eff = 0`` (no information
    about the spread between clusters: the vacuous interval).
    """
    x_eff, n_eff, deff, _, _ = _effective(successes, trials, alpha, axis)
    return x_eff, n_eff, deff


def _effective(successes: ArrayLike, trials: ArrayLike, alpha: float, axis: int = 0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_eff, n_eff, deff, icc, clusters)``: `effective_counts` and the rest of its `design_effect`."""
    y = np.asarray(successes, dtype=np.float64)
    m = np.asarray(trials, dtype=np.float64)
    deff, icc, k = design_effect(y, m, axis)
    n = m.sum(axis=axis)
    p = np.where(n > 0, y.sum(axis=axis) / np.where(n > 0, n, 1.0), 0.0)
    n_eff = np.minimum(n / deff * degrees_of_freedom_factor(k, alpha), n)
    return p * n_eff, n_eff, deff, icc, k


def _beta_interval(x: float, n: float, alpha: float) -> tuple[float, float]:
    """Clopper-Pearson for non-integer counts (the Beta quantiles take real parameters); n = 0 is vacuous."""
    if n <= 0:
        return 0.0, 1.0
    lo, hi = clopper_pearson(min(max(x, 0.0), n), n, alpha)
    return float(lo), float(hi)


def _matching_n(p: float, lower: float, upper: float, n_max: float, alpha: float) -> float:
    """The (real) n whose Clopper-Pearson interval at ``p`` reaches as far as ``[lower, upper]`` on its wider side.

    The interval narrows as n grows: the largest n on a log grid whose interval still holds ``[lower, upper]``,
    refined once on a finer grid (relative precision ~1e-3; Beta quantiles straight from ``betaincinv``).
    """
    lo_n, hi_n = 1.0, max(n_max, 1.0)
    for _ in range(2):
        n = np.geomspace(lo_n, hi_n, 64)
        x = p * n
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(x > 0, betaincinv(x, n - x + 1, alpha / 2), 0.0)
            b = np.where(x < n, betaincinv(x + 1, n - x, 1 - alpha / 2), 1.0)
        holds = np.flatnonzero((a <= lower + 1e-12) & (b >= upper - 1e-12))
        if holds.size == 0:
            return lo_n
        i = int(holds[-1])
        lo_n, hi_n = float(n[i]), float(n[min(i + 1, n.size - 1)])
    return lo_n


def clustered_proportion(successes: ArrayLike, trials: ArrayLike, alpha: float = 0.05) -> ClusteredProportion:
    """The proportion ``Σy / Σm`` of per-cluster counts with its Korn-Graubard interval (module docstring)."""
    y = np.asarray(successes, dtype=np.int64).ravel()
    m = np.asarray(trials, dtype=np.int64).ravel()
    x_eff, n_eff, deff, icc, k = _effective(y, m, alpha)  # one design effect for the interval and the report
    n, s = int(m.sum()), int(y.sum())
    if n == 0:
        return ClusteredProportion(s, 0, 0, None, None, None, 1.0, None, 0.0, alpha, CLUSTERED)
    kg = _beta_interval(float(x_eff), float(n_eff), alpha)
    lo, hi = profile_interval(y, m, alpha, within=kg) if k > 1 else kg
    if (lo, hi) != kg:
        n_eff = _matching_n(s / n, lo, hi, float(n_eff), alpha)
    return ClusteredProportion(
        successes=s,
        trials=n,
        clusters=int(k),
        point=s / n,
        lower=lo,
        upper=hi,
        design_effect=float(deff),
        icc=float(icc),
        effective_n=float(n_eff),
        alpha=alpha,
        method=CLUSTERED,
        boundary=s in (0, n),
    )


def proportion(
    successes: int, trials: int, per_cluster: tuple[ArrayLike, ArrayLike] | None, alpha: float = 0.05
) -> ClusteredProportion:
    """`clustered_proportion` of ``per_cluster = (successes_i, trials_i)`` when given, else `plain_proportion`.

    The per-cluster counts must add up to the totals (a mismatch is a bug upstream, never silently ignored).
    """
    if per_cluster is None:
        return plain_proportion(successes, trials, alpha)
    y, m = (np.asarray(a, dtype=np.int64) for a in per_cluster)
    if int(y.sum()) != int(successes) or int(m.sum()) != int(trials):
        raise ValueError(
            f"per-cluster counts ({int(y.sum())} of {int(m.sum())}) do not add up to {successes} of {trials}"
        )
    return clustered_proportion(y, m, alpha)
