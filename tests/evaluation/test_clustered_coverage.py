"""Coverage of the cluster-aware interval on data of known truth (issue 24 items 2 and 3).

Fixed seeds and few trials (the large run is benchmarks/bench_clustered_coverage.py, its table in
docs/confusion-matrices.md). Coverage must reach the nominal 95 % minus 3 Monte-Carlo standard errors, for every
correlation and for good detectors (p = 0.95) too, where a rare failure comes as whole bad episodes.
"""

import numpy as np
import pytest

from perception_safety.evaluation.clustered import clustered_proportion, effective_counts
from perception_safety.evaluation.coverage import beta_binomial_clusters, coverage
from perception_safety.evaluation.intervals import clopper_pearson

NOMINAL = 0.95
TRIALS = 200


def _clustered(y, m):
    r = clustered_proportion(y, m)
    return r.lower, r.upper


def _plain(y, m):
    lo, hi = clopper_pearson(int(y.sum()), int(m.sum()))
    return float(lo), float(hi)


@pytest.mark.parametrize("icc", [0.0, 0.1, 0.3, 0.6])
@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
@pytest.mark.parametrize(("clusters", "frames"), [(10, 20), (20, 10)])
def test_clustered_interval_covers_at_nominal(icc, p, clusters, frames):
    rng = np.random.default_rng(24 + int(100 * icc) + clusters + int(100 * p))
    y, m = beta_binomial_clusters(rng, TRIALS, clusters, frames, p, icc)
    cov = coverage(_clustered, y, m, p)
    mc_se = np.sqrt(NOMINAL * (1 - NOMINAL) / TRIALS)
    assert cov.covered >= NOMINAL - 3 * mc_se, cov


def test_plain_interval_fails_on_correlated_frames():
    # The reason for the method: frame-level Clopper-Pearson undercovers badly at ICC 0.3.
    rng = np.random.default_rng(7)
    y, m = beta_binomial_clusters(rng, TRIALS, 10, 20, 0.8, 0.3)
    assert coverage(_plain, y, m, 0.8).covered < 0.85


def test_design_effect_alone_fails_good_detectors_with_bad_episodes():
    """Why the profile likelihood is in the hull: Korn-Graubard alone at p = 0.95, ICC 0.6, 10 episodes."""
    rng = np.random.default_rng(8)
    y, m = beta_binomial_clusters(rng, TRIALS, 10, 20, 0.95, 0.6)

    def kg(yy, mm):
        x, n, _ = effective_counts(yy, mm)
        lo, hi = clopper_pearson(float(x), float(n))
        return float(lo), float(hi)

    assert coverage(kg, y, m, 0.95).covered < 0.8
    assert coverage(_clustered, y, m, 0.95).covered >= NOMINAL - 3 * np.sqrt(NOMINAL * (1 - NOMINAL) / TRIALS)


def test_independent_frames_cost_at_most_15_percent_width():
    rng = np.random.default_rng(11)
    for clusters, frames, p in ((20, 10, 0.8), (20, 50, 0.9), (40, 25, 0.5)):
        y, m = beta_binomial_clusters(rng, TRIALS, clusters, frames, p, 0.0)
        ratio = coverage(_clustered, y, m, p).median_width / coverage(_plain, y, m, p).median_width
        assert ratio <= 1.15, (clusters, frames, p, ratio)
