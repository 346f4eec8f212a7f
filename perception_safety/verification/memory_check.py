"""The sweep's use of the independence test (issue 24 item 9): per chain, which P(φ) the data support.

Per (variant, true environment, V) with the pedestrian column's observation sequences (`memory.ObservationRuns`,
episodes as the unit): `memory.assess` tests every bin the memoryless chain decides in. ``independent``: the
memoryless numbers stand. ``memory``: misses come in runs; the chain with one step of observation memory is built
from the observed transition counts and checked (P(φ), its interval-chain bounds and its posterior credible
interval from Dirichlet draws of the conditional columns (episodes as the unit through their design effect),
reported beside the memoryless ones; a requirement reads a bound, never the point). ``inconclusive``: the data
cannot test a decision bin, or the memory chain would read a conditional column without data, or the environment
has several true columns (the memory chain models one): P(φ) is INCONCLUSIVE for any requirement, never a silent
number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from perception_safety.evaluation.clustered import MIN_CLUSTERS
from perception_safety.verification.builder import AbstractSystem, MarkovChain, build_chain
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import decision_bins
from perception_safety.verification.memory import (
    INCONCLUSIVE,
    MEMORY,
    ObservationRuns,
    assess,
    memory_counts,
    memory_system,
)
from perception_safety.verification.posterior import PosteriorSummary, reachable_mask, round_to_error
from perception_safety.verification.specs import check_steps
from perception_safety.verification.storm_batch import Steps, run
from perception_safety.verification.uncertainty import chain_bounds_steps, chain_posterior, posterior_draws


@dataclass(frozen=True)
class MemoryCheck:
    """One chain's verdict on its independence assumption and, with ``memory``, the memory chain's P(φ)
    (``values[spec][i]``, ``lower``/``upper`` at the i-th initial state of the memoryless chain)."""

    status: str
    reason: str = ""
    values: dict[str, np.ndarray] = field(default_factory=dict)
    lower: dict[str, np.ndarray] = field(default_factory=dict)
    upper: dict[str, np.ndarray] = field(default_factory=dict)
    posterior: dict[str, PosteriorSummary] = field(default_factory=dict)
    """Per spec: the memory chain's posterior (Dirichlet draws of its conditional columns' effective counts)."""
    info: dict[str, Any] = field(default_factory=dict)

    def row(self, spec: str, i: int) -> dict[str, Any]:
        """The result row's keys for spec ``spec`` at initial state ``i``."""
        out: dict[str, Any] = {"independence": self.status}
        if self.status == MEMORY:
            out["memory_clusters"] = self.info.get("memory_clusters")
            out["memory_probability"] = float(self.values[spec][i])
            lo, hi = self.lower.get(spec), self.upper.get(spec)
            out["memory_lower"] = None if lo is None else float(lo[i])
            out["memory_upper"] = None if hi is None else float(hi[i])
            q = self.posterior.get(spec)
            if q is not None:
                err = None if q.mc_error is None else float(q.mc_error[i])
                out |= {f"memory_posterior_{k}": round_to_error(float(getattr(q, k)[i]), err or 0.0)
                        for k in ("lower", "upper", "mean")}
                out["memory_posterior_mc_error"] = None if err is None else float(f"{err:.2g}")
        if self.status == INCONCLUSIVE:
            out["status"] = INCONCLUSIVE
            out["inconclusive_reason"] = self.reason
        return out


@dataclass(frozen=True, eq=False)
class MemoryData:
    """One (variant, true environment)'s matrices and pedestrian-column runs (``hit``: the column), with what the
    check derives from them alone kept for every max speed of the sweep: the product counts and their posterior
    draws (seeded by the names, not by V, so they are the same draws at every V)."""

    counted: CountedObservations
    runs: ObservationRuns
    hit: int
    _draws: dict[tuple[str, str], np.ndarray | None] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def product(self) -> CountedObservations:
        """`memory.memory_counts` of the column (its design effect, computed once, serves every V)."""
        return memory_counts(self.counted, self.runs, self.hit)[0]

    def draws(self, cfg: VerificationConfig, where: str) -> np.ndarray | None:
        key = (where, cfg.posterior.model_dump_json())
        if key not in self._draws:
            self._draws[key] = posterior_draws(self.product, cfg, where, "memory")
        return self._draws[key]


def check_memory(system: AbstractSystem, data: MemoryData, specs: dict[str, str], cfg: VerificationConfig,
                 where: str, warnings: list[str], bins: np.ndarray | None = None) -> MemoryCheck:
    """Assess the chain's decision bins (``bins``: `interval_chain.decision_bins` when the caller has them) and,
    when misses come in runs, check the memory chain (module docstring)."""
    return run(check_memory_steps(system, data, specs, cfg, where, warnings, bins))


def check_memory_steps(system: AbstractSystem, data: MemoryData, specs: dict[str, str], cfg: VerificationConfig,
                       where: str, warnings: list[str], bins: np.ndarray | None = None) -> Steps[MemoryCheck]:
    """`check_memory` as a `storm_batch` computation."""
    counted, runs, hit = data.counted, data.runs, data.hit
    bins = [int(b) for b in (decision_bins(system, counted.model()) if bins is None else bins)]
    where = where.rsplit("/V=", 1)[0]  # the tests do not depend on V: one warning per (variant, environment)
    if runs.pairs.shape[1:] != (counted.counts.shape[0], counted.counts.shape[1], counted.counts.shape[1]):
        raise VerificationError(f"{where}: observation sequences {runs.pairs.shape[1:]} do not match the matrices")
    try:
        a = assess(runs, counted, hit, bins, cfg.alpha)
    except VerificationError:  # several true columns: the memory chain models one
        a = assess(runs, _one_column(counted, hit), hit, bins, cfg.alpha)
        if a.status == MEMORY:
            reason = (f"{where}: misses of the pedestrian come in runs, and the environment has several true columns: "
                      "the chain with observation memory models one, so P(phi) is INCONCLUSIVE")
            warnings += [f"{where}: {w}" for w in a.warnings] + [reason]
            return MemoryCheck(INCONCLUSIVE, reason, info=_info(a, INCONCLUSIVE))
    warnings += [f"{where}: {w}" for w in a.warnings]
    if a.status == INCONCLUSIVE:
        reason = (f"{where}: the independence of consecutive observations cannot be established in decision bin(s) "
                  f"{list(a.decision_bins)}: P(phi) is INCONCLUSIVE")
        warnings.append(reason)
        return MemoryCheck(INCONCLUSIVE, reason, info=_info(a))
    if a.status != MEMORY:
        return MemoryCheck(a.status, info=_info(a))
    mem_counted = data.product
    mem_system = memory_system(system, counted.model())
    chain = reachable_part(build_chain(mem_system, mem_counted.model()))
    starts = np.asarray(chain.initial_states, dtype=np.int64)
    values = {}
    for name, f in specs.items():
        values[name] = np.asarray((yield from check_steps(chain, f)))[starts]
    starts = np.asarray(mem_system.initial_states, dtype=np.int64)  # the bounds: over the whole product
    bounds, binfo = yield from chain_bounds_steps(mem_system, mem_counted, specs, cfg, f"{where} (memory chain)",
                                                  warnings)
    post = chain_posterior(mem_system, mem_counted.model(), data.draws(cfg, where), specs, cfg, warnings)
    clusters = _clusters(mem_counted, binfo.get("decision_bins"))
    if clusters is not None and clusters < MIN_CLUSTERS:
        reason = (f"{where}: the chain with observation memory reads conditional columns resting on {clusters} "
                  f"episode(s) (< {MIN_CLUSTERS}): its P(phi) is INCONCLUSIVE for any requirement")
        warnings.append(reason)
    return MemoryCheck(
        MEMORY, "", values, {k: b.lower[starts] for k, b in bounds.items()},
        {k: b.upper[starts] for k, b in bounds.items()}, post,
        {**_info(a), "memory_states": chain.n_states, "memory_decision_bins": binfo.get("decision_bins"),
         "memory_clusters": clusters},
    )


def _clusters(counted: CountedObservations, bins: list[int] | None) -> int | None:
    """Fewest episodes behind a used column of the bins the chain decides in (None: no cluster information)."""
    d = counted.design()
    if d is None:
        return None
    sel = np.asarray(bins if bins else range(counted.counts.shape[0]), dtype=np.int64)
    return int(d.clusters[np.ix_(sel, counted.true_columns)].min())


INDEPENDENCE_MARKERS = ("consecutive observations", "come in runs", "observation memory", "no observation followed")


def is_independence_warning(text: str) -> bool:
    """Whether a sweep warning is about the chain's independence assumption (its own kind on screen and in JSON)."""
    return any(m in text for m in INDEPENDENCE_MARKERS)


def reachable_part(chain: MarkovChain) -> MarkovChain:
    """The states reachable from the initial ones (same order). Most ``(state, last observation)`` pairs of the
    product are never reached, and Storm's LTL product fails on such a chain ("Invalid item count of state
    labeling"); P(φ) at the initial states is unchanged."""
    a = chain.to_scipy()
    idx = np.flatnonzero(reachable_mask(a, chain.initial_states))
    new = np.full(chain.n_states, -1, dtype=np.int64)
    new[idx] = np.arange(idx.size)
    sub = a[idx][:, idx].tocsr()
    return MarkovChain(sub.indptr.astype(np.int64), sub.indices.astype(np.int64), sub.data.astype(np.float64),
                       {k: np.asarray(v)[idx] for k, v in chain.labels.items()}, new[chain.initial_states],
                       lambda s: chain.describe(int(idx[s])))


def _one_column(counted: CountedObservations, hit: int) -> CountedObservations:
    """The ``hit`` column of a several-column environment alone (outcomes: each predicted label), to test it."""
    f = int(np.flatnonzero(counted.cells[0, :, 1] == hit)[0])
    names = {int(c[f, 0]): (o[f],) for o, c in zip(counted.outcomes, counted.cells, strict=True)}
    labels = range(counted.counts.shape[1])
    cells = np.array([[(i, hit)] for i in labels], dtype=np.int64)
    return CountedObservations(tuple(names.get(i, (str(i),)) for i in labels), cells, counted.counts,
                               counted.bin_edges, counted.source, counted.clusters)


def _info(a: Any, status: str | None = None) -> dict[str, Any]:
    """The chain record's summary of the tests of its decision bins (``status``: the chain's, default the test's)."""
    return {"independence": status or a.status, "independence_tests": [
        {"bin": t.bin, "p_miss": t.p_miss, "p_miss_after_miss": t.p_miss_after_miss,
         "p_miss_after_hit": t.p_miss_after_hit, "episodes": t.episodes, "pairs": t.pairs,
         "p_value": t.p_value, "verdict": t.verdict} for t in a.tests if t.bin in a.decision_bins]}
