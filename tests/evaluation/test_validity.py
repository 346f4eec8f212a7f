"""Model validity: the cluster-aware two-sample test per column accepts data from the same detector at (at most)
the nominal family-wise rate, also with correlated frames, and rejects a degraded detector."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.validity import column_shifts, column_test, holm

LABELS = ["ped", "obs", "empty"]
BINS = ["[0, 10) m", "[10, 20) m"]


def grouped_counts(rng, p_hit, episodes=12, frames=20, icc=0.3) -> np.ndarray:
    """Per-episode class-labeled counts [cluster, bin, pred, true]: each true class j in each bin is looked at
    ``frames`` times per episode; the episode's own hit rate is Beta-distributed around p_hit[b][j] with the given
    intra-cluster correlation (a misses go to 'empty', or for 'empty' to 'ped')."""
    cm = np.zeros((episodes, len(BINS), len(LABELS), len(LABELS)), dtype=np.int64)
    for c in range(episodes):
        for b in range(len(BINS)):
            for j in range(len(LABELS)):
                p = p_hit[b][j]
                if icc > 0:
                    s = (1 - icc) / icc
                    p = rng.beta(max(p * s, 1e-3), max((1 - p) * s, 1e-3))
                hits = rng.binomial(frames, p)
                cm[c, b, j, j] += hits
                cm[c, b, 2 if j != 2 else 0, j] += frames - hits
    return cm


SAME = [[0.9, 0.8, 0.95], [0.7, 0.75, 0.95]]


@pytest.mark.parametrize("icc", [0.0, 0.3])
def test_same_detector_is_accepted_at_the_nominal_rate(icc):
    rng = np.random.default_rng(11)
    trials, rejected = 200, 0
    for _ in range(trials):
        res = column_shifts(grouped_counts(rng, SAME, icc=icc), grouped_counts(rng, SAME, icc=icc), LABELS, BINS)
        rejected += any(r.rejected for r in res)
    rate = rejected / trials
    se = np.sqrt(0.05 * 0.95 / trials)
    assert rate <= 0.05 + 3 * se, rate


def naive_binomial_rejects(a: np.ndarray, b: np.ndarray, alpha: float = 0.05) -> bool:
    """Frames as independent samples: a two-proportion z-test per column, Bonferroni (computed here, not by us)."""
    from scipy.stats import norm

    pvals = []
    for bi in range(len(BINS)):
        for j in range(len(LABELS)):
            x1, n1 = a[:, bi, j, j].sum(), a[:, bi, :, j].sum()
            x2, n2 = b[:, bi, j, j].sum(), b[:, bi, :, j].sum()
            p = (x1 + x2) / (n1 + n2)
            se = np.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
            pvals.append(1.0 if se == 0 else 2 * norm.sf(abs(x1 / n1 - x2 / n2) / se))
    return min(pvals) < alpha / len(pvals)


def test_frame_counting_would_reject_far_too_often_with_correlated_frames():
    """The same detector, frames correlated within episodes (ICC 0.3): treating frames as independent rejects far
    more than 5 % of the time — the reason the test uses episodes — while ours stays at the nominal rate."""
    rng = np.random.default_rng(5)
    naive = ours = 0
    for _ in range(150):
        a, b = grouped_counts(rng, SAME, icc=0.3), grouped_counts(rng, SAME, icc=0.3)
        naive += naive_binomial_rejects(a, b)
        ours += any(r.rejected for r in column_shifts(a, b, LABELS, BINS))
    assert naive / 150 > 0.3 and ours / 150 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 150)


def test_a_degraded_detector_is_rejected_in_the_column_that_moved():
    rng = np.random.default_rng(2)
    worse = [[0.4, 0.8, 0.95], [0.7, 0.75, 0.95]]  # pedestrians near the ego found far less often
    hits = others = 0
    for _ in range(50):
        res = column_shifts(grouped_counts(rng, SAME), grouped_counts(rng, worse), LABELS, BINS)
        moved = {(r.bin, r.true_label) for r in res if r.rejected}
        hits += ("[0, 10) m", "ped") in moved
        others += bool(moved - {("[0, 10) m", "ped")})
    assert hits / 50 >= 0.9
    assert others <= 5  # the columns that did not move are rarely flagged (family-wise 5 %)


def test_holm_and_the_detectable_shift_by_hand():
    a = column_test("b", "ped", (np.array([9, 8, 9]), np.array([10, 10, 10])),
                    (np.array([5, 4, 6]), np.array([10, 10, 10])), 0.05)
    b = column_test("b", "obs", (np.array([5, 5, 5]), np.array([10, 10, 10])),
                    (np.array([5, 5, 5]), np.array([10, 10, 10])), 0.05)
    # equal rates with no spread: the binomial floor keeps the statistic at 0
    assert b.statistic == 0.0 and b.p_value == pytest.approx(1.0)
    out = holm([a, b], 0.05)
    assert out[0].p_adjusted == pytest.approx(min(1.0, 2 * a.p_value))
    assert out[1].p_adjusted == pytest.approx(max(out[0].p_adjusted, b.p_value))
    assert out[0].min_detectable_shift is not None and 0 < out[0].min_detectable_shift <= 1
    # one episode on a side: no spread between episodes can be estimated: nothing detectable, never rejected
    one = holm([column_test("b", "ped", (np.array([9]), np.array([10])), (np.array([1]), np.array([10])), 0.05)],
               0.05)[0]
    assert not one.rejected and one.min_detectable_shift is None
