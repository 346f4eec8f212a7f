"""SG/RH/AC intervals with the episode as the unit (issue 24 items 3 and 5): hand values and coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from perception_safety.evaluation.coverage import beta_binomial_clusters
from perception_safety.evaluation.returns.intervals import mean_interval

NOMINAL, TRIALS = 0.95, 300


def test_one_collision_in_seven_episodes_by_hand() -> None:
    # The demo's RH under E2: the monitored rollout collides in 1 of 7 episodes, f* never.
    rh = [np.array([1.0])] + [np.array([0.0])] * 6
    r = mean_interval(rh, "episodes")
    assert r.point == pytest.approx(1 / 7) and r.episodes == 7
    # Positive part: exact Clopper-Pearson of 1 of 7 at alpha/2; the negative part (0 of 7) has lower bound 0.
    assert r.upper == pytest.approx(beta.ppf(1 - 0.0125, 2, 6))
    assert r.lower == pytest.approx(beta.ppf(0.0125, 1, 7) - (1 - 0.0125 ** (1 / 7)))
    assert r.upper > 0.5  # an RH <= 0.1 requirement cannot pass on these data


def test_frame_average_widens_with_grouped_collisions() -> None:
    grouped = [np.ones(100)] + [np.zeros(100)] * 9  # every frame of one episode vs none of the others
    scattered = [np.r_[np.ones(10), np.zeros(90)]] * 10
    # non-negative (E1's form): the comparison is about the collisions' part alone
    g, s = mean_interval(grouped, "frames", nonnegative=True), mean_interval(scattered, "frames", nonnegative=True)
    assert g.point == s.point == pytest.approx(0.1)
    assert g.design_effect > 50 and s.design_effect == 1.0
    assert g.upper - g.lower > 3 * (s.upper - s.lower)
    # A difference of either sign without a single negative frame: 10 episodes cannot rule out that some
    # episodes are negative throughout (the beta-binomial profile's all-or-nothing reading), so the lower end
    # goes well below 0, but stays within the range [-1, 1].
    either = mean_interval(scattered, "frames")
    assert -1.0 <= either.lower < -0.1 and either.upper == pytest.approx(s.upper, abs=0.05)


def _draw(rng, clusters, frames, p_pos, q_neg, icc):
    """Per episode: frames +1 (beta-binomial, mean p_pos), then -1 among the rest with an episode's own rate."""
    pos, m = beta_binomial_clusters(rng, TRIALS, clusters, frames, p_pos, icc)
    s = (1 - icc) / icc if icc else None
    q = np.full(pos.shape, q_neg) if s is None else rng.beta(q_neg * s, (1 - q_neg) * s, size=pos.shape)
    neg = rng.binomial(m - pos, q)
    return pos, neg, m, p_pos - (1 - p_pos) * q_neg


@pytest.mark.parametrize("icc", [0.0, 0.1, 0.3, 0.6])
def test_frame_averaged_metric_covers(icc: float) -> None:
    rng = np.random.default_rng(100 + int(10 * icc))
    pos, neg, m, truth = _draw(rng, 15, 20, 0.3, 0.05, icc)
    covered = []
    for pi, ni, mi in zip(pos, neg, m, strict=True):
        d = [np.r_[np.ones(p), -np.ones(n), np.zeros(k - p - n)] for p, n, k in zip(pi, ni, mi, strict=True)]
        r = mean_interval(d, "frames")
        covered.append(r.lower <= truth <= r.upper)
    se = np.sqrt(NOMINAL * (1 - NOMINAL) / TRIALS)
    assert np.mean(covered) >= NOMINAL - 3 * se


@pytest.mark.parametrize("p", [0.05, 0.3])
def test_episode_averaged_metric_covers(p: float) -> None:
    rng = np.random.default_rng(7)
    hits = rng.random((TRIALS, 12)) < p
    covered = [mean_interval([np.array([float(h)]) for h in row], "episodes") for row in hits]
    se = np.sqrt(NOMINAL * (1 - NOMINAL) / TRIALS)
    assert np.mean([r.lower <= p <= r.upper for r in covered]) >= NOMINAL - 3 * se


def test_e1_intervals_stay_in_zero_one_on_few_episodes() -> None:
    """Issue 24 item 4: E1's SG/RH/AC are TP/n, FN/n, FP/n (never negative). 5 episodes, 1 of them with missed
    errors: the interval is the exact Clopper-Pearson of the values alone at 1 - alpha, never below 0."""
    rh = [np.array([1.0])] + [np.array([0.0])] * 4
    two_sided = mean_interval(rh, "episodes")
    assert two_sided.lower < 0  # read as a difference of either sign, the bound leaves the quantity's range
    r = mean_interval(rh, "episodes", nonnegative=True)
    assert r.lower == pytest.approx(beta.ppf(0.025, 1, 5)) and r.upper == pytest.approx(beta.ppf(0.975, 2, 4))
    zero = mean_interval([np.zeros(20)] * 5, "frames", nonnegative=True)
    assert zero.lower == 0.0 and 0 < zero.upper < 1 and zero.point == 0.0
    with pytest.raises(ValueError, match="non-negative"):
        mean_interval([np.array([-1.0, 0.0])], "frames", nonnegative=True)


def test_e1_report_intervals_lie_in_their_range() -> None:
    """Every E1 bound in returns_intervals(nonnegative=True) is within [0, 1] even where the point is 0."""
    from perception_safety.evaluation.returns.estimates import classification_returns
    from perception_safety.evaluation.returns.intervals import returns_intervals

    rng = np.random.default_rng(3)
    per = [classification_returns(rng.random(30) < 0.2, rng.random(30) < 0.1) for _ in range(4)]
    for average in ("frames", "episodes"):
        iv = returns_intervals(per, average, nonnegative=True)
        for key in ("SG", "RH", "AC", "hazard_f"):
            assert 0.0 <= iv[f"{key}_lower"] <= iv[f"{key}_upper"] <= 1.0, (average, key, iv)
