"""Coverage of the P(φ) interval bounds and posterior on grouped data of known truth (issue 24 items 3 and 6).

Small trial counts at fixed seeds; each asserts coverage >= nominal - 3 Monte-Carlo standard errors (at the
nominal rate). The large run is benchmarks/bench_chain_coverage.py (table in docs/verification.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.coverage import ChainSetup, chain_coverage

NOMINAL = 0.95


def floor(trials: int) -> float:
    return NOMINAL - 3 * np.sqrt(NOMINAL * (1 - NOMINAL) / trials)


def test_truth_is_the_product_of_the_decisions():
    """V = 2, crosswalk at cell 5: from (1, 1) the only braking decision is taken 1 m away (bin 0); from (1, 2)
    the car brakes at 4 m (bin 1) and again at 1 m (bin 0). Independent of the chain code: P = h0, h0 h1."""
    s = ChainSetup(hit=(0.9, 0.8))
    np.testing.assert_allclose(s.truth(), [0.9, 0.9 * 0.8], atol=1e-12)


@pytest.mark.parametrize("icc", [0.0, 0.1, 0.3, 0.6])
def test_bounds_and_posterior_cover_with_episodes_as_the_unit(icc):
    r = chain_coverage(ChainSetup(), trials=60, clusters=10, frames=10, icc=icc, seed=11, draws=300)
    assert r.bounds.covered >= floor(r.bounds.trials), r
    assert r.posterior.covered >= floor(r.posterior.trials), r


def test_frames_as_the_unit_do_not_cover_correlated_data():
    """The failure the episodes fix: the same data read frame by frame (today's bare counts)."""
    r = chain_coverage(ChainSetup(), trials=60, clusters=10, frames=10, icc=0.6, seed=11, draws=300,
                       use_clusters=False)
    assert r.bounds.covered < 0.85 and r.posterior.covered < 0.8


@pytest.mark.parametrize("frames", [20, 50])
def test_posterior_covers_for_good_detectors(frames):
    """Issue 24 item 6: P(ped | ped) = 0.98 / 0.95; Dirichlet(0.5) over 3 cells pulls P(hit) towards 1/3."""
    setup = ChainSetup(hit=(0.98, 0.95))
    split = chain_coverage(setup, trials=120, clusters=1, frames=frames, icc=0.0, seed=5, draws=400,
                           use_clusters=False, method="split")
    dirichlet = chain_coverage(setup, trials=120, clusters=1, frames=frames, icc=0.0, seed=5, draws=400,
                               use_clusters=False, method="dirichlet")
    assert split.posterior.covered >= floor(split.posterior.trials), split
    assert dirichlet.posterior.covered < split.posterior.covered
    assert dirichlet.posterior.upper_below > split.posterior.upper_below  # the pull: upper ends below the truth


def test_posterior_covers_good_detectors_with_bad_episodes():
    """P(ped | ped) = 0.98 / 0.95 and ICC 0.6 over 10 episodes: most episodes perfect, a rare one mostly blind.
    The column's design effect from Korn-Graubard alone misses them (posterior coverage 0.865 in 100 trials); the
    hit rate's cluster-aware interval (with the beta-binomial profile) keeps them."""
    r = chain_coverage(ChainSetup(hit=(0.98, 0.95)), trials=60, clusters=10, frames=10, icc=0.6, seed=11, draws=300)
    assert r.bounds.covered >= floor(r.bounds.trials), r
    assert r.posterior.covered >= floor(r.posterior.trials), r
