"""Cluster-aware column counts in the interval chain and the posterior (issue 24 item 1): hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, norm
from scipy.stats import t as student_t

from perception_safety.verification.bounds import spec_bounds
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import build_interval_chain, decision_bins
from perception_safety.verification.specs import BUILTIN_SPECS

LABELS = ["ped", "obs", "empty"]


def episodes(hits: list[int], frames: int) -> np.ndarray:
    """``[episode, bin=1, pred, true]``: each episode sees the pedestrian ``frames`` times, ``hits`` detected."""
    out = np.zeros((len(hits), 1, 3, 3))
    out[:, 0, 0, 0] = hits
    out[:, 0, 2, 0] = frames - np.asarray(hits)
    out[:, 0, 2, 2] = frames  # the empty column: always right
    return out


def hand_korn_graubard(hits: np.ndarray, frames: np.ndarray, alpha: float) -> tuple[float, float]:
    """Korn–Graubard by hand, with loops: ratio variance over clusters, deff >= 1, t-factor, Beta quantiles."""
    n, k = float(frames.sum()), len(hits)
    p = hits.sum() / n
    v = k / (k - 1) * sum((y - p * m) ** 2 for y, m in zip(hits, frames, strict=True)) / n**2
    deff = max(v / (p * (1 - p) / n), 1.0) if 0 < p < 1 else 1.0
    n_eff = min(n / deff * (norm.ppf(1 - alpha / 2) / student_t.ppf(1 - alpha / 2, k - 1)) ** 2, n)
    x = p * n_eff
    lo = beta.ppf(alpha / 2, x, n_eff - x + 1) if x > 0 else 0.0
    hi = beta.ppf(1 - alpha / 2, x + 1, n_eff - x) if x < n_eff else 1.0
    return lo, hi


def counted(clusters: np.ndarray) -> CountedObservations:
    return CountedObservations.for_class(clusters.sum(axis=0), LABELS, ["ped"], [(0.0, 100.0)], "test", clusters)


def test_cell_intervals_are_korn_graubard_of_the_episodes():
    hits = [100] * 9 + [0]  # issue 24's example: detected in every frame of 9 episodes, never in the 10th
    c = counted(episodes(hits, 100))
    lo, hi = c.intervals(0.05, [0])
    want = hand_korn_graubard(np.array(hits, float), np.full(10, 100.0), 0.05 / 3)
    assert lo[0, 0] == pytest.approx(want[0], abs=1e-12) and hi[0, 0] == pytest.approx(want[1], abs=1e-12)
    plain = CountedObservations.for_class(c.counts, LABELS, ["ped"], [(0.0, 100.0)])
    p_lo, _ = plain.intervals(0.05, [0])
    assert p_lo[0, 0] > 0.85  # 900 of 1000 frames taken as independent: [0.87, 0.92]
    assert lo[0, 0] < 0.6 and hi[0, 0] > 0.99  # ten looks: the interval says so
    d = c.design()
    assert d.clusters[0, 0] == 10 and d.deff[0, 0] > 50 and d.frames[0, 0] == 1000


def test_without_clusters_the_intervals_are_exactly_the_plain_ones():
    counts = episodes([7, 9, 3], 10).sum(axis=0)
    plain = CountedObservations.for_class(counts, LABELS, ["ped"], [(0.0, 100.0)])
    assert plain.design() is None
    np.testing.assert_array_equal(plain.effective_counts(), plain.counts)
    lo, hi = plain.intervals(0.05, [0])
    assert lo[0, 0] == beta.ppf(0.05 / 3 / 2, 19, 30 - 19 + 1) and hi[0, 0] == beta.ppf(1 - 0.05 / 3 / 2, 20, 11)


def test_one_episode_gives_the_vacuous_interval_and_the_chain_band_is_wide():
    c = counted(episodes([30], 40))
    lo, hi = c.intervals(0.05, [0])
    assert lo[0, 0] == 0.0 and hi[0, 0] == 1.0
    g = Geometry.reference(1)
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, [1])
    b = spec_bounds(build_interval_chain(system, c.model(0.05, decision_bins(system, c.model()))),
                    {"phi": BUILTIN_SPECS["phi"]})["phi"]
    assert b.lower[g.index(1, 1)] == 0.0 and b.upper[g.index(1, 1)] == 1.0


def test_posterior_uses_each_columns_design_effect():
    hits = [10] * 9 + [0]
    c = counted(episodes(hits, 10))
    d = c.design()
    eff = c.effective_counts()
    np.testing.assert_allclose(eff[0, :, 0], c.counts[0, :, 0] / d.deff[0, 0])
    assert d.deff[0, 2] == 1.0  # the empty column has no variation: design effect 1
    draws = c.sample(np.random.default_rng(0), 4000, 0.5)
    plain = CountedObservations.for_class(c.counts, LABELS, ["ped"], [(0.0, 100.0)]).sample(
        np.random.default_rng(0), 4000, 0.5)
    assert draws[:, 0, 0].std() > 2.5 * plain[:, 0, 0].std()


def test_cluster_counts_must_add_up():
    cl = episodes([3, 4], 5)
    with pytest.raises(VerificationError, match="summing to the counts"):
        CountedObservations.for_class(cl.sum(axis=0) + 1, LABELS, ["ped"], [(0.0, 100.0)], "t", cl)


def _split_reference(n_episodes: int):
    """The reference matrices dealt into ``n_episodes`` episodes (multinomial split of every cell, fixed seed)."""
    from dataclasses import replace

    from perception_safety.evaluation.confusion.io import load_matrices

    from .conftest import REFERENCE

    dc = load_matrices(REFERENCE)
    rng = np.random.default_rng(0)
    parts = {}
    for kind in ("class", "prop"):
        c = np.asarray(dc.counts(kind), dtype=np.int64)
        split = np.moveaxis(rng.multinomial(c.ravel(), np.full(n_episodes, 1 / n_episodes)), -1, 0)
        parts[kind] = split.reshape((n_episodes, *c.shape))
    eps = [replace(dc, class_cm=parts["class"][e], prop_cm=parts["prop"][e],
                   class_cm_pooled=parts["class"][e].sum(axis=0), prop_cm_pooled=parts["prop"][e].sum(axis=0))
           for e in range(n_episodes)]
    return dc, eps


@pytest.mark.parametrize(("n_episodes", "status"), [(4, "inconclusive"), (12, "ok")])
def test_sweep_with_episodes_states_the_unit_and_too_few_are_inconclusive(n_episodes, status):
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.sweep import run_sweep

    dc, eps = _split_reference(n_episodes)
    cfg = VerificationConfig(max_speeds=[2], variants=["class_by_distance"], specs=["phi"], posterior={"draws": 200},
                             true_envs={"ped": {"class": ["ped"], "prop": "ped"}})
    plain, clustered = run_sweep(dc, cfg), run_sweep(dc, cfg, episodes=eps)
    assert "status" not in plain.results[0] and plain.chains[0]["unit"]["kind"] == "frames"
    for p, c in zip(plain.results, clustered.results, strict=True):
        assert c["probability"] == p["probability"]  # the point estimate does not depend on the unit
        assert c["clusters"] == n_episodes and c["status"] == status
        assert c["lower"] <= p["lower"] + 1e-12 and c["upper"] >= p["upper"] - 1e-12
    assert clustered.chains[0]["unit"] == {"kind": "episodes", "clusters": n_episodes,
                                           "design_effect": clustered.chains[0]["unit"]["design_effect"]}
    assert any("INCONCLUSIVE" in w for w in clustered.warnings) == (status == "inconclusive")
