"""Paired tests of two runs on the same objects: bootstrap over episodes and McNemar's worst case."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.evaluation.paired import mcnemar_worst_case, paired_bootstrap


def _episodes(seed: int = 4, e: int = 30):
    rng = np.random.default_rng(seed)
    n = rng.integers(20, 60, e)
    base = rng.uniform(0.4, 0.9, e)  # episodes differ a lot (between-episode variance) ...
    a = rng.binomial(n, base)
    b = np.minimum(n, a + rng.binomial(n, 0.04))  # ... but B finds a few more objects in every episode
    return a, n, b, n


def test_the_bootstrap_is_the_joint_resampling_of_episodes():
    a, n, b, _ = _episodes()
    res = paired_bootstrap(a, n, b, n, draws=500, seed=7)
    rng = np.random.default_rng(7)  # the same draws, computed by a plain loop
    d = []
    for _ in range(500):
        idx = rng.integers(0, len(a), len(a))
        d.append(b[idx].sum() / n[idx].sum() - a[idx].sum() / n[idx].sum())
    lo, hi = np.quantile(d, [0.025, 0.975])
    assert (res.lower, res.upper) == (pytest.approx(lo), pytest.approx(hi))
    assert res.diff == pytest.approx(b.sum() / n.sum() - a.sum() / n.sum()) and res.units == len(a)


def test_pairing_finds_a_consistent_gain_that_disjoint_intervals_miss():
    a, n, b, _ = _episodes()
    ia = clopper_pearson(int(a.sum()), int(n.sum()))
    ib = clopper_pearson(int(b.sum()), int(n.sum()))
    assert ia[1] >= ib[0]  # the runs' own intervals overlap: the old rule says "not significant"
    res = paired_bootstrap(a, n, b, n)
    assert res.significant and res.lower > 0


def test_no_difference_is_not_significant():
    a, n, _, _ = _episodes()
    res = paired_bootstrap(a, n, a, n)
    assert res.diff == 0 and not res.significant


def test_mcnemar_worst_case_against_the_exact_binomial_test():
    # all 10 objects found by A, none by B: every object is discordant, b = 10, c = 0
    assert mcnemar_worst_case(10, 0, 10).p_value == pytest.approx(2 * 0.5**10)
    # 50 vs 30 of 100: at most 80 discordant (50 found by A only, 30 by B only); the worst case is that one
    res = mcnemar_worst_case(50, 30, 100)
    assert res.p_value == pytest.approx(binomtest(30, 80, 0.5).pvalue)
    assert res.significant is (res.p_value < 0.05) and res.diff == pytest.approx(-0.2)
    assert mcnemar_worst_case(7, 7, 20).p_value == 1.0
