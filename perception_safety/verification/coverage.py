"""Coverage of the P(φ) interval bounds and posterior on grouped data of known truth (issue 24 item 3).

A small car–pedestrian chain (`ChainSetup`: max speed, bins, the true ``P(ped | ped)`` per bin) gives the
truth ``P(φ)`` at every initial speed from the true matrices (Storm). Each trial draws per bin ``clusters``
episodes of ``frames`` pedestrian frames with intra-cluster correlation ``icc``
(`evaluation.coverage.beta_binomial_clusters`: a miss is predicted ``empty``), builds the interval chain and
the posterior from the counts (with or without the episodes), and records whether ``[lower, upper]`` holds
the truth: jointly for every initial speed for the interval chain (its claim), per initial speed for the
posterior (the credible level is per number). Shared by tests/verification/test_coverage.py and
benchmarks/bench_chain_coverage.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perception_safety.evaluation.coverage import Coverage, beta_binomial_clusters
from perception_safety.verification.bounds import spec_bounds
from perception_safety.verification.builder import AbstractSystem, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.interval_chain import build_interval_chain, decision_bins
from perception_safety.verification.observations import class_observations
from perception_safety.verification.posterior import chain_skeleton, posterior_values, summarise
from perception_safety.verification.specs import BUILTIN_SPECS, check

LABELS = ("ped", "obs", "empty")


@dataclass(frozen=True)
class ChainSetup:
    """Reference geometry of ``max_speed``; ``hit[b]`` = true ``P(ped | ped)`` in bin ``b`` (else ``empty``)."""

    max_speed: int = 2
    bin_edges: tuple[tuple[float, float], ...] = ((0.0, 2.5), (2.5, 100.0))
    hit: tuple[float, ...] = (0.9, 0.8)
    spec: str = field(default=BUILTIN_SPECS["phi"])

    def system(self) -> AbstractSystem:
        g = Geometry.reference(self.max_speed)
        return car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, self.max_speed + 1))

    def true_matrices(self) -> np.ndarray:
        p = np.zeros((len(self.hit), 3, 3))
        p[:, 0, 0] = self.hit
        p[:, 2, 0] = 1 - np.asarray(self.hit)
        p[:, 2, 2] = 1.0
        return p

    def truth(self) -> np.ndarray:
        """P(φ) at the initial states under the true matrices (Storm on the point chain)."""
        system = self.system()
        obs = class_observations(self.true_matrices(), LABELS, ["ped"], self.bin_edges)
        chain = build_chain(system, obs)
        return check(chain, self.spec)[chain.initial_states]


def grouped_counts(rng: np.random.Generator, setup: ChainSetup, clusters: int, frames: int,
                   icc: float) -> np.ndarray:
    """``[cluster, bin, pred, true]``: per bin ``clusters`` episodes of ``frames`` pedestrian frames."""
    out = np.zeros((clusters, len(setup.hit), 3, 3))
    for b, p in enumerate(setup.hit):
        hits, m = beta_binomial_clusters(rng, 1, clusters, frames, p, icc)
        out[:, b, 0, 0] = hits[0]
        out[:, b, 2, 0] = m[0] - hits[0]
    out[:, :, 2, 2] = frames  # the empty column: never used by the pedestrian environment
    return out


@dataclass(frozen=True)
class ChainCoverage:
    """Coverage of the interval-chain bounds (joint over initial speeds) and of the posterior (per speed)."""

    bounds: Coverage
    posterior: Coverage
    icc: float
    clusters: int
    frames: int
    use_clusters: bool


def _coverage(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, joint: bool) -> Coverage:
    ok = (lo <= truth + 1e-12) & (truth <= hi + 1e-12)
    if joint:
        covered, above, below = ok.all(axis=1), (lo > truth + 1e-12).any(axis=1), (hi < truth - 1e-12).any(axis=1)
    else:
        covered, above, below = ok.ravel(), (lo > truth + 1e-12).ravel(), (hi < truth - 1e-12).ravel()
    return Coverage(covered=float(covered.mean()), lower_above=float(above.mean()), upper_below=float(below.mean()),
                    trials=int(covered.size), median_width=float(np.median(hi - lo)))


def chain_coverage(setup: ChainSetup, trials: int, clusters: int, frames: int, icc: float, seed: int = 0,
                   alpha: float = 0.05, draws: int = 1000, level: float = 0.95, prior: float = 0.5,
                   use_clusters: bool = True, method: str = "split") -> ChainCoverage:
    """Measure both coverages over ``trials`` simulated data sets (fixed ``seed``)."""
    rng = np.random.default_rng(seed)
    system, truth = setup.system(), setup.truth()
    skeleton = None
    b_lo, b_hi, q_lo, q_hi = [], [], [], []
    for _ in range(trials):
        cl = grouped_counts(rng, setup, clusters, frames, icc)
        counted = CountedObservations.for_class(cl.sum(axis=0), LABELS, ["ped"], setup.bin_edges, "coverage",
                                                cl if use_clusters else None)
        point = counted.model()
        b = spec_bounds(build_interval_chain(system, counted.model(alpha, decision_bins(system, point))),
                        {"q": setup.spec})["q"]
        starts = system.initial_states
        b_lo.append(b.lower[starts])
        b_hi.append(b.upper[starts])
        skeleton = skeleton or chain_skeleton(system, point)
        values = posterior_values(skeleton, counted.sample(rng, draws, prior, method, level), {"q": setup.spec})["q"]
        s = summarise(values, level)
        q_lo.append(s.lower)
        q_hi.append(s.upper)
    return ChainCoverage(
        bounds=_coverage(np.array(b_lo), np.array(b_hi), truth, joint=True),
        posterior=_coverage(np.array(q_lo), np.array(q_hi), truth, joint=False),
        icc=icc, clusters=clusters, frames=frames, use_clusters=use_clusters,
    )


def markov_miss_sequences(rng: np.random.Generator, episodes: int, frames_per_bin: int, n_bins: int,
                          miss_after_miss: float, miss_after_hit: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Run-length-correlated misses (issue 24 item 9): per episode the pedestrian approaches through the bins
    (far to near, ``frames_per_bin`` frames each); a frame is missed (label 2, ``empty``) with probability
    ``miss_after_miss`` after a miss and ``miss_after_hit`` after a hit (label 0, ``ped``), the first frame at the
    stationary rate ``q / (1 − r + q)``. Returns ``(bins, labels)`` per episode for `memory.ObservationRuns`."""
    r, q = miss_after_miss, miss_after_hit
    frames = frames_per_bin * n_bins
    bins = np.repeat(np.arange(n_bins)[::-1], frames_per_bin)
    u = rng.random((episodes, frames))
    miss = np.zeros((episodes, frames), dtype=bool)
    miss[:, 0] = u[:, 0] < q / (1 - r + q)
    for t in range(1, frames):
        miss[:, t] = u[:, t] < np.where(miss[:, t - 1], r, q)
    return [(bins, np.where(m, 2, 0)) for m in miss]
