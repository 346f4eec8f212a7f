"""Intervals of SG, RH, AC and the hazard of f with the episode as the independent unit (issue 24 item 5).

Each metric is a mean of per-sample differences ``d`` (``S_fm - S_f``, ``S_f* - S_fm``, ``M_f - M_fm``,
``S_f* - S_f``), bounded in ``[-s, s]`` (``s = 1`` for E1 and for E2 with one counted collision). Split
``d = d⁺ - d⁻`` into its positive and negative parts, each a proportion in ``[0, 1]`` after dividing by ``s``:

- averaged over **episodes** (one value per episode): the two proportions have the episodes as samples;
  exact Clopper-Pearson with the (possibly fractional) sums as successes of ``n`` episodes;
- averaged over **frames**: frames of one episode are correlated, so each part is a clustered proportion
  (per-episode sums of ``d⁺`` of the episode's frames) with the cluster-aware interval of
  `perception_safety.evaluation.clustered`.

The metric's interval is ``[lo(d⁺) - hi(d⁻), hi(d⁺) - lo(d⁻)]`` (times ``s``) with each part at level
``1 - alpha/2`` (Bonferroni over the two parts), so it holds at ``1 - alpha``, and never leaves ``[-s, s]``.

A metric that cannot be negative by its definition (``nonnegative``: E1, where SG = TP/n, RH = FN/n,
AC = FP/n, issue 24 item 4) has no negative part: its interval is the positive part's alone at ``1 - alpha``,
inside ``[0, s]`` (before, the negative part's empty upper bound pushed the lower end below 0 on few episodes).
The clustered parts take the hull of Korn-Graubard and the beta-binomial profile likelihood, as every
clustered proportion does (`evaluation.clustered`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from perception_safety.evaluation.betabinomial import profile_interval
from perception_safety.evaluation.clustered import effective_counts
from perception_safety.evaluation.intervals import clopper_pearson

Average = Literal["frames", "episodes"]


@dataclass(frozen=True)
class MeanInterval:
    """A mean of bounded differences with its interval and what it rests on."""

    point: float
    lower: float
    upper: float
    episodes: int
    samples: int
    design_effect: float
    method: str

    def as_dict(self, key: str) -> dict[str, Any]:
        return {f"{key}_lower": self.lower, f"{key}_upper": self.upper, f"{key}_design_effect": self.design_effect}


def _part(num: np.ndarray, den: np.ndarray, alpha: float, clustered: bool) -> tuple[float, float, float]:
    """Bounds of ``Σnum / Σden`` for per-episode sums of a [0, 1] quantity; and the design effect."""
    if clustered:
        x, n, deff = effective_counts(num, den, alpha)
        x, n, deff = float(x), float(n), float(deff)
    else:
        x, n, deff = float(num.sum()), float(den.sum()), 1.0
    if n <= 0:
        return 0.0, 1.0, deff
    lo, hi = clopper_pearson(min(max(x, 0.0), n), n, alpha)
    if clustered and (den > 0).sum() > 1:
        return (*profile_interval(num, den, alpha, within=(float(lo), float(hi))), deff)
    return float(lo), float(hi), deff


def mean_interval(per_episode: Sequence[np.ndarray], average: Average, alpha: float = 0.05,
                  nonnegative: bool = False) -> MeanInterval:
    """The mean of the differences ``per_episode`` (one array per episode) and its interval (module docstring).

    ``average="frames"``: the mean over all samples, episodes as clusters; ``"episodes"``: each array is one
    episode's sample(s), its mean is one value and the episodes are the samples. ``nonnegative``: the
    differences are >= 0 by definition (a negative one is an error), so the interval lies in ``[0, s]``.
    """
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in per_episode if np.size(a)]
    if not arrays:
        raise ValueError("no samples")
    if nonnegative and any((a < 0).any() for a in arrays):
        raise ValueError("a difference declared non-negative is negative")
    if average == "episodes":
        arrays = [np.array([a.mean()]) for a in arrays]
    scale = max(1.0, max(float(np.abs(a).max()) for a in arrays))
    pos = np.array([np.clip(a, 0, None).sum() for a in arrays]) / scale
    neg = np.array([np.clip(-a, 0, None).sum() for a in arrays]) / scale
    m = np.array([len(a) for a in arrays], dtype=np.float64)
    clustered = average == "frames"
    split = 1 if nonnegative else 2
    p_lo, p_hi, p_deff = _part(pos, m, alpha / split, clustered)
    n_lo, n_hi, n_deff = (0.0, 0.0, 1.0) if nonnegative else _part(neg, m, alpha / 2, clustered)
    point = float(np.concatenate(arrays).mean())
    parts = "the values (non-negative by definition)" if nonnegative else "the positive and negative parts (Bonferroni)"
    method = (
        f"per-episode values, exact Clopper-Pearson on {parts}"
        if not clustered
        else f"frames clustered by episode, Korn-Graubard with the beta-binomial profile on {parts}"
    )
    return MeanInterval(
        point=point,
        lower=max(scale * (p_lo - n_hi), -scale),
        upper=min(scale * (p_hi - n_lo), scale),
        episodes=len(arrays),
        samples=int(m.sum()),
        design_effect=max(p_deff if pos.sum() else 1.0, n_deff if neg.sum() else 1.0),
        method=method,
    )


DIFFERENCES = {
    "SG": lambda r: r.safety_fm - r.safety_f,
    "RH": lambda r: r.safety_gt - r.safety_fm,
    "AC": lambda r: r.mission_f - r.mission_fm,
    "hazard_f": lambda r: r.safety_gt - r.safety_f,
}
"""The per-sample difference each metric averages (eq. 6-9)."""


def returns_intervals(per_episode: Sequence[Any], average: Average, alpha: float = 0.05,
                      nonnegative: bool = False) -> dict[str, Any]:
    """``{SG_lower, SG_upper, SG_design_effect, ..., episodes, interval}`` of per-episode `Returns`;
    ``nonnegative`` for E1's classification form (every difference is 0 or 1: the intervals stay in [0, 1])."""
    out: dict[str, Any] = {}
    method = ""
    for key, diff in DIFFERENCES.items():
        mi = mean_interval([diff(r) for r in per_episode], average, alpha, nonnegative)
        out |= mi.as_dict(key)
        out["episodes"], method = mi.episodes, mi.method
    out["interval"] = f"{100 * (1 - alpha):g} %, {method}"
    return out
