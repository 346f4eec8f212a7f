"""The cluster-aware proportion interval (evaluation/clustered.py): hand-computed values and the issue's examples."""

import numpy as np
import pytest
from scipy.stats import beta, norm
from scipy.stats import t as student_t

from perception_safety.evaluation.clustered import (
    clustered_proportion,
    design_effect,
    effective_counts,
    plain_proportion,
    proportion,
)
from perception_safety.evaluation.intervals import clopper_pearson


def test_plain_proportion_is_exactly_clopper_pearson():
    lo, hi = clopper_pearson(31, 158, 0.05)
    r = plain_proportion(31, 158)
    assert (r.lower, r.upper, r.point) == (float(lo), float(hi), 31 / 158)
    assert r.clusters is None and r.design_effect == 1.0 and r.effective_n == 158
    assert proportion(31, 158, None) == r
    assert plain_proportion(0, 0).lower is None


def test_grouped_example_by_hand_does_not_reach_0_8():
    # 10 episodes x 100 frames: 9 detected in every frame, 1 in none (issue 24).
    y = np.array([100] * 9 + [0])
    m = np.full(10, 100)
    r = clustered_proportion(y, m)
    # Korn-Graubard by hand: v = k/(k-1) * sum (y_i - p m_i)^2 / n^2, deff = v / (p(1-p)/n).
    v = 10 / 9 * (9 * 10**2 + 90**2) / 1000**2
    deff = v / (0.9 * 0.1 / 1000)
    n_eff = 1000 / deff * (norm.ppf(0.975) / student_t.ppf(0.975, 9)) ** 2
    assert r.design_effect == pytest.approx(deff)
    assert r.effective_n == pytest.approx(n_eff)
    assert r.lower == pytest.approx(beta.ppf(0.025, 0.9 * n_eff, 0.1 * n_eff + 1))
    assert r.upper == pytest.approx(beta.ppf(0.975, 0.9 * n_eff + 1, 0.1 * n_eff))
    assert r.lower < 0.8 and r.clusters == 10 and r.trials == 1000
    assert r.icc == pytest.approx(min((deff - 1) / 99, 1.0))
    assert any("worth about" in w for w in r.warnings("recall"))


def test_scattered_example_stays_above_0_8():
    rng = np.random.default_rng(3)
    miss = np.zeros(1000, dtype=bool)
    miss[rng.choice(1000, 100, replace=False)] = True
    y = (~miss).reshape(10, 100).sum(axis=1)
    r = clustered_proportion(y, np.full(10, 100))
    assert r.point == 0.9 and r.lower > 0.85
    assert r.design_effect < 1.5
    cp_lo, _ = clopper_pearson(900, 1000)
    assert r.lower <= cp_lo  # never narrower than the binomial interval


def test_one_cluster_is_vacuous_and_few_clusters_flagged():
    r = clustered_proportion([90], [100])
    assert (r.lower, r.upper) == (0.0, 1.0) and r.clusters == 1
    assert r.too_few_clusters(10)
    assert any("INCONCLUSIVE" in w for w in r.warnings("recall"))


def test_boundary_has_deff_one_and_says_so():
    r = clustered_proportion([50] * 12, [50] * 12)
    assert r.point == 1.0 and r.boundary and r.design_effect == 1.0 and r.upper == 1.0
    assert any("cannot be estimated" in w for w in r.warnings("recall"))


def test_perfect_episodes_bound_like_one_look_each():
    """12 perfect episodes: every episode all-or-nothing explains the data as well as independent frames, and then
    the likelihood of mean rate q is q^12; the 95 % profile set (F(1, 11) cut-off t²) ends at exp(-t² / 24)."""
    r = clustered_proportion([50] * 12, [50] * 12)
    assert r.lower == pytest.approx(np.exp(-student_t.ppf(0.975, 11) ** 2 / 24), abs=1e-6)
    # frame-level Clopper-Pearson would claim 0.994 from 600 frames
    assert r.lower < 0.82 < float(clopper_pearson(600, 600)[0])


def test_one_missed_frame_among_perfect_episodes_is_not_600_independent_looks():
    """The regime Korn-Graubard alone under-covers: nearly perfect episodes, the spread too small to see."""
    y = np.array([50] * 11 + [49])
    r = clustered_proportion(y, np.full(12, 50))
    kg_lo, _ = clopper_pearson(*effective_counts(y, np.full(12, 50))[:2])
    assert r.lower < kg_lo - 0.01 and r.lower < 0.97


def test_effective_counts_vectorised_over_columns_equals_scalar():
    rng = np.random.default_rng(0)
    m = rng.integers(0, 30, size=(12, 3, 4))
    y = rng.binomial(m, 0.7)
    x_eff, n_eff, deff = effective_counts(y, m)
    assert x_eff.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            r = clustered_proportion(y[:, i, j], m[:, i, j])
            kg_lo, kg_hi = clopper_pearson(x_eff[i, j], n_eff[i, j])
            assert deff[i, j] == pytest.approx(r.design_effect)
            # the reported interval holds Korn-Graubard's (the profile likelihood can only widen it) ...
            assert r.lower <= kg_lo + 1e-12 and r.upper >= kg_hi - 1e-12
            # ... and its effective n is Korn-Graubard's unless the profile widened it
            widened = r.lower < kg_lo - 1e-12 or r.upper > kg_hi + 1e-12
            assert r.effective_n == pytest.approx(n_eff[i, j]) if not widened else r.effective_n < n_eff[i, j]


def test_design_effect_rejects_inconsistent_counts_and_totals_must_match():
    with pytest.raises(ValueError):
        design_effect([3], [2])
    with pytest.raises(ValueError, match="do not add up"):
        proportion(5, 10, ([1, 2], [5, 5]))


def test_small_effective_n_warning_names_the_design_effect_the_interval_implies():
    """An estimate of 1 (no failure) has no estimable design effect (kept as 1), yet the hull's interval is as wide
    as few independent looks: the warning must not say 'design effect 1' beside '1317 samples worth 9'."""
    import re


    r = clustered_proportion(np.full(7, 188), np.full(7, 188))  # 7 episodes, every frame a success
    (w,) = [w for w in r.warnings("precision") if "worth about" in w]
    shown = float(re.search(r"design effect of ([0-9.e+]+)", w).group(1))
    assert shown == pytest.approx(r.trials / r.effective_n, rel=0.05) and shown > 2


def test_degrees_of_freedom_factor_is_the_scipy_stats_quantile_ratio():
    """(z / t_{k-1})² from scipy.special equals the same ratio from scipy.stats' t and norm quantiles, bit for bit."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    from perception_safety.evaluation.clustered import degrees_of_freedom_factor

    k = np.arange(0, 400)
    for alpha in (0.05, 0.01, 0.05 / 36):
        ref = np.where(k > 1, (norm.ppf(1 - alpha / 2) / student_t.ppf(1 - alpha / 2, np.maximum(k - 1, 1))) ** 2, 0.0)
        assert degrees_of_freedom_factor(k, alpha).tobytes() == ref.tobytes()
