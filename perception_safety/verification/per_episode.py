"""The car–pedestrian chain per episode, averaged over episodes (issue 24 item 8).

The pooled chain reads one matrix summed over every episode, so its P(φ) is that of an "average detector"
meeting the pedestrian over and over. Episodes differ (light, distance, the pedestrian's clothes): a detector
that is perfect in nine episodes and blind in the tenth has a pooled matrix that looks like a 90 % detector in
every episode, while the system fails in one episode in ten. Here each episode's own confusion counts give its
own observation model μ_k^e (same bins, same outcomes, same controller: Algorithm 3 on the same structure), its
chain is checked, and the mean of the episodes' P(φ) is reported with an interval over the episodes:

- the chains share one structure (`posterior.chain_skeleton`), so all episodes are solved in one batch
  (`posterior.posterior_values`, the absorbing-chain solve the posterior uses); a spec of another shape is
  model-checked with Storm per episode (`builder.build_chain`, `specs.check`);
- an episode without a sample in a used column of a bin the chain decides in (it never met the pedestrian at
  that distance) takes the pooled column there: the number of such episodes per bin is warned about; an episode
  without any sample in the used columns of the decision bins is left out (not evidence) and counted;
- interval: each episode's P(φ) is one value in [0, 1], the episodes are the independent units: Clopper–Pearson
  with the values' sum as (fractional) successes of ``E`` episodes (exact when every value is 0 or 1,
  conservative otherwise; covers at nominal in tests/verification/test_per_episode.py), at ``1 − alpha``.

Assumptions: the episodes are independent draws of the conditions the claim is about; within an episode the
chain's own assumptions hold (a fresh observation at every step from that episode's matrix).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.types import column_normalize
from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.verification.builder import AbstractSystem, ObservationModel, build_chain
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import outcome_probs
from perception_safety.verification.posterior import ChainSkeleton, posterior_values
from perception_safety.verification.specs import check


@dataclass(frozen=True)
class EpisodeChains:
    """Per spec: each used episode's P(φ) at the initial states ``values[spec][episode, i]``; which episodes
    were used, and per decision bin how many used episodes took the pooled column there."""

    values: dict[str, np.ndarray]
    used: np.ndarray
    filled: dict[int, int] = field(default_factory=dict)
    alpha: float = 0.05
    _rows: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def episodes(self) -> int:
        return int(self.used.sum())

    def row(self, spec: str, i: int) -> dict[str, Any]:
        """``episode_mean``/``episode_lower``/``episode_upper`` of spec ``spec`` at initial state ``i``."""
        v = self.values.get(spec)
        if v is None or v.shape[0] == 0:
            return {"episode_chains": self.episodes}
        if spec not in self._rows:  # every initial state at once; each column's sum as numpy sums it alone
            x = np.ascontiguousarray(np.clip(v, 0.0, 1.0).T)
            self._rows[spec] = (x.mean(axis=1), *clopper_pearson(x.sum(axis=1), x.shape[1], self.alpha))
        mean, lo, hi = (float(a[i]) for a in self._rows[spec])
        return {"episode_mean": mean, "episode_lower": lo, "episode_upper": hi, "episode_chains": self.episodes}


def episode_probabilities(counted: CountedObservations, bins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(probs[episode, bin, outcome], empty[episode, bin], used[episode])`` from each episode's own counts.

    ``empty``: the episode has no sample in some used column of the bin (that column is the pooled one);
    ``used``: the episode has samples in every used column of at least one bin of ``bins``.
    """
    if counted.clusters is None:
        raise VerificationError(f"{counted.source}: per-episode chains need per-episode counts")
    cl = counted.clusters  # [episode, bin, pred, true]
    cols = counted.true_columns
    totals = cl.sum(axis=2)  # [episode, bin, true]
    missing = totals == 0
    filled = np.where(missing[:, :, None, :], counted.counts[None], cl)
    probs = outcome_probs(column_normalize(filled), counted.cells)
    empty = missing[:, :, cols].any(axis=2)
    sel = np.asarray(bins, dtype=np.int64) if len(bins) else np.arange(counted.counts.shape[0])
    used = (~empty[:, sel]).any(axis=1)
    return probs, empty, used


def episode_chains(system: AbstractSystem, counted: CountedObservations, skeleton: ChainSkeleton,
                   specs: dict[str, str], bins: np.ndarray, alpha: float, where: str,
                   warnings: list[str]) -> EpisodeChains:
    """Every episode's chain checked (module docstring); warnings name the episodes left out or filled in."""
    return episodes_and_draws(system, counted, skeleton, specs, bins, alpha, where, warnings)[0]


def episodes_and_draws(system: AbstractSystem, counted: CountedObservations, skeleton: ChainSkeleton,
                       specs: dict[str, str], bins: np.ndarray, alpha: float, where: str, warnings: list[str],
                       draws: np.ndarray | None = None,
                       ) -> tuple[EpisodeChains, dict[str, np.ndarray | VerificationError] | None]:
    """`episode_chains` and, with ``draws`` (the posterior's ``[draw, bin, outcome]``), their P(φ) ``[draw,
    initial state]`` solved in the same pass (`posterior.posterior_values`; each column its own: the same numbers)."""
    probs, empty, used = episode_probabilities(counted, bins)
    total = used.size
    if not used.all():
        warnings.append(f"{where}: {total - int(used.sum())} of {total} episode(s) have no sample of the "
                        "environment's column in any bin the chain decides in: left out of the per-episode chains")
    sel = [int(b) for b in (bins if len(bins) else range(counted.counts.shape[0]))]
    filled = {b: int(empty[used, b].sum()) for b in sel if empty[used, b].any()}
    if filled:
        per_bin = ", ".join(f"bin {b}: {n}" for b, n in filled.items())
        warnings.append(f"{where}: per-episode chains: episodes without a sample in a bin the chain decides in take "
                        f"the pooled column there ({per_bin} of {int(used.sum())} episode(s))")
    p = probs[used]
    values: dict[str, np.ndarray] = {}
    drawn: dict[str, np.ndarray | VerificationError] | None = None
    if p.shape[0] or draws is not None:
        d = 0 if draws is None else draws.shape[0]
        both = posterior_values(skeleton, p if draws is None else np.concatenate([draws, p]), specs)
        drawn = None if draws is None else {k: v if isinstance(v, VerificationError) else v[:d]
                                            for k, v in both.items()}
        if p.shape[0]:
            for name, v in both.items():
                values[name] = _storm(system, counted, p, specs[name]) if isinstance(v, VerificationError) else v[d:]
    return EpisodeChains(values, used, filled, alpha), drawn


def _storm(system: AbstractSystem, counted: CountedObservations, probs: np.ndarray, formula: str) -> np.ndarray:
    """P(φ) ``[episode, initial state]`` by building and model-checking each episode's chain with Storm."""
    out = []
    for p in probs:
        chain = build_chain(system, ObservationModel(counted.outcomes, p, counted.bin_edges, counted.source))
        out.append(np.asarray(check(chain, formula))[np.asarray(chain.initial_states, dtype=np.int64)])
    return np.asarray(out)
