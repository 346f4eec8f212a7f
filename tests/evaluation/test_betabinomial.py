"""The beta-binomial profile-likelihood interval (evaluation/betabinomial.py) against scipy's own beta-binomial."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import betabinom
from scipy.stats import t as student_t

from perception_safety.evaluation.betabinomial import profile_interval


def _profile_by_scipy(mu: float, y: np.ndarray, m: np.ndarray) -> float:
    """max over the ICC of the beta-binomial log-likelihood at mean ``mu`` (scipy's pmf, a bounded 1-D search)."""

    def nll(log_theta: float) -> float:
        t = np.exp(log_theta)
        return -float(betabinom.logpmf(y, m, mu * t, (1 - mu) * t).sum())

    res = minimize_scalar(nll, bounds=(np.log(1e-4), np.log(1e6)), method="bounded", options={"xatol": 1e-6})
    coefficients = np.log([_comb(a, b) for a, b in zip(m, y, strict=True)]).sum()
    binomial = float((y * np.log(mu) + (m - y) * np.log1p(-mu)).sum() + coefficients)
    return max(-res.fun, binomial)


def _comb(n: int, k: int) -> float:
    from math import comb

    return float(comb(int(n), int(k)))


def test_ends_sit_where_the_deviance_meets_the_f_cut_off():
    y = np.array([18, 20, 12, 19, 20, 20, 15, 17, 20, 19])
    m = np.full(10, 20)
    lo, hi = profile_interval(y, m)
    assert 0 < lo < y.sum() / m.sum() < hi < 1
    grid = np.linspace(0.5, 0.99, 99)
    best = max(_profile_by_scipy(g, y, m) for g in grid)
    cut = student_t.ppf(0.975, 9) ** 2
    for end in (lo, hi):
        assert 2 * (best - _profile_by_scipy(end, y, m)) == pytest.approx(cut, abs=0.02)


def test_hull_with_a_given_interval_and_too_few_clusters():
    y, m = np.array([18, 20, 12, 19, 20, 20, 15, 17, 20, 19]), np.full(10, 20)
    lo, hi = profile_interval(y, m)
    assert profile_interval(y, m, within=(0.1, 0.92)) == (0.1, pytest.approx(hi, abs=1e-6))
    assert profile_interval(y, m, within=(lo - 0.01, hi + 0.01)) == (lo - 0.01, hi + 0.01)
    assert profile_interval([5], [10]) == (0.0, 1.0)
    assert profile_interval([5, 3, 0], [10, 10, 0]) == profile_interval([5, 3], [10, 10])


def test_equal_counts_in_any_order_give_the_same_interval_once_solved():
    """The interval depends on the multiset of (successes, trials): a permutation of the clusters is the same data,
    and the second call is served by the cache (no likelihood evaluation)."""
    from perception_safety.evaluation import betabinomial

    y, m = np.array([18, 20, 12, 19, 20, 20, 15, 17, 20, 19]), np.full(10, 20)
    betabinomial._pairs_interval.cache_clear()
    first = profile_interval(y, m)
    order = np.random.default_rng(3).permutation(10)
    assert profile_interval(y[order], m[order]) == first
    info = betabinomial._pairs_interval.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    betabinomial._pairs_interval.cache_clear()
    assert profile_interval(y[order], m[order]) == first  # solved afresh: the same numbers


def test_tree_bisection_is_the_step_by_step_bisection_bit_for_bit():
    """`_bisect_tree` (several steps per evaluation) against plain bisection written out here, on a monotone
    function with crossings at awkward points, both directions (inside below or above out)."""
    from perception_safety.evaluation.betabinomial import _bisect_tree

    roots = np.array([0.123456789, 0.87654321])
    calls = []

    def dev(mu: np.ndarray) -> np.ndarray:
        calls.append(mu.size)  # the first half of mu is the lower end's points, the second the upper's
        return 10 * np.abs(mu - np.repeat(roots, mu.size // 2))

    inside, out = np.array([0.5, 0.5]), np.array([1e-9, 1 - 1e-9])
    a, b = inside.copy(), out.copy()
    for _ in range(12):  # the reference: one midpoint per end per step
        mid = 0.5 * (b + a)
        ok = 10 * np.abs(mid - roots) <= 1.0
        a, b = np.where(ok, mid, a), np.where(ok, b, mid)
    x, y = inside, out
    for _ in range(4):
        x, y = _bisect_tree(dev, 1.0, x, y, 3)
    assert x.tobytes() == a.tobytes() and y.tobytes() == b.tobytes()
    assert calls == [14] * 4  # 2 ends x (2^3 - 1) midpoints per call
