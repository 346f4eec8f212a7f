"""The per-episode chain averaged over episodes (issue 24 item 8): each episode's P(φ) against Storm on that
episode's own chain, empty bins, and the coverage of the interval over episodes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from perception_safety.verification.builder import ObservationModel, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.interval_chain import decision_bins
from perception_safety.verification.per_episode import EpisodeChains, episode_chains
from perception_safety.verification.posterior import chain_skeleton
from perception_safety.verification.specs import BUILTIN_SPECS, check

LABELS = ["ped", "obs", "empty"]
EDGES = [(0.0, 3.0), (3.0, 100.0)]
SPECS = {"phi": BUILTIN_SPECS["phi"], "stop_at_k": BUILTIN_SPECS["stop_at_k"]}


def episodes(hits: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """``[episode, bin, pred, true]``: per episode and bin ``frames`` pedestrian samples, ``hits`` detected (the rest
    missed), and an always-right empty column."""
    out = np.zeros((*hits.shape, 3, 3))
    out[..., 0, 0] = hits
    out[..., 2, 0] = frames - hits
    out[..., 2, 2] = 5
    return out


def setup(clusters: np.ndarray, V: int = 2):
    c = CountedObservations.for_class(clusters.sum(axis=0), LABELS, ["ped"], EDGES, "test", clusters)
    system = car_pedestrian_system(Geometry.reference(V), {"ped": True, "obs": False}, list(range(1, V + 1)))
    return c, system


def test_each_episode_is_its_own_chain_checked_by_storm():
    hits = np.array([[10, 20], [2, 20], [10, 5], [0, 0]])
    frames = np.array([[10, 20], [10, 20], [10, 20], [10, 20]])
    c, system = setup(episodes(hits, frames))
    obs = c.model()
    warnings: list[str] = []
    r = episode_chains(system, c, chain_skeleton(system, obs), SPECS, decision_bins(system, obs), 0.05, "t", warnings)
    assert r.episodes == 4 and not warnings
    for e in range(4):  # Storm on a chain built from the episode's own column-normalised matrix, by hand
        p_hit = hits[e] / frames[e]
        probs = np.stack([p_hit, np.zeros(2), 1 - p_hit], axis=1)  # outcomes ped, obs, empty
        chain = build_chain(system, ObservationModel((("ped",), ("obs",), ("empty",)), probs, tuple(EDGES)))
        for name, formula in SPECS.items():
            want = np.asarray(check(chain, formula))[np.asarray(chain.initial_states)]
            np.testing.assert_allclose(r.values[name][e], want, atol=1e-9)
    row = r.row("phi", 0)
    x = r.values["phi"][:, 0]
    assert row["episode_mean"] == pytest.approx(x.mean()) and row["episode_chains"] == 4
    assert row["episode_lower"] == pytest.approx(beta.ppf(0.025, x.sum(), 4 - x.sum() + 1))
    assert row["episode_upper"] == pytest.approx(beta.ppf(0.975, x.sum() + 1, 4 - x.sum()))


def test_one_blind_episode_in_ten_is_what_the_mean_over_episodes_says():
    """Nine perfect episodes and one blind one: the pooled matrix is a 90 % detector in every step, the episodes
    are not. By hand: the car stops in the nine perfect episodes and never in the blind one, so the mean of the
    episodes' P(stop) is 0.9 from any v0; the pooled chain needs v0 independent 90 % detections to brake to 0
    (0.9^v0): it mistakes one bad episode for bad luck at every step."""
    hits = np.array([[20, 20]] * 9 + [[0, 0]])
    c, system = setup(episodes(hits, np.full((10, 2), 20)), V=3)
    obs = c.model()
    r = episode_chains(system, c, chain_skeleton(system, obs), SPECS, decision_bins(system, obs), 0.05, "t", [])
    chain = build_chain(system, obs)
    pooled = np.asarray(check(chain, SPECS["stop_at_k"]))[np.asarray(chain.initial_states)]
    mean = r.values["stop_at_k"].mean(axis=0)
    np.testing.assert_allclose(mean, 0.9, atol=1e-9)
    np.testing.assert_allclose(pooled, 0.9 ** np.arange(1, 4), atol=1e-9)


def test_empty_bins_take_the_pooled_column_and_say_so_and_empty_episodes_are_left_out():
    hits = np.array([[10, 20], [0, 20], [0, 0], [5, 10]])
    frames = np.array([[10, 20], [0, 20], [0, 0], [10, 10]])  # episode 1: no pedestrian in bin 0; 2: none at all
    c, system = setup(episodes(hits, frames))
    obs = c.model()
    bins = decision_bins(system, obs)
    assert set(bins.tolist()) == {0, 1}
    warnings: list[str] = []
    r = episode_chains(system, c, chain_skeleton(system, obs), SPECS, bins, 0.05, "here", warnings)
    assert r.episodes == 3 and r.used.tolist() == [True, True, False, True] and r.filled == {0: 1}
    assert any("1 of 4 episode(s)" in w and "left out" in w for w in warnings)
    assert any("bin 0: 1 of 3 episode(s)" in w and "pooled column" in w for w in warnings)
    # episode 1 in bin 0 reads the pooled column: 15 of 20 pooled hits there
    p_hit = np.array([15 / 20, 20 / 20])
    probs = np.stack([p_hit, np.zeros(2), 1 - p_hit], axis=1)
    chain = build_chain(system, ObservationModel((("ped",), ("obs",), ("empty",)), probs, tuple(EDGES)))
    want = np.asarray(check(chain, SPECS["phi"]))[np.asarray(chain.initial_states)]
    np.testing.assert_allclose(r.values["phi"][1], want, atol=1e-9)


def test_interval_over_episodes_covers_bounded_means():
    """Per-episode P(φ) values in [0, 1] (Beta-distributed, incl. a U-shaped case and one piled up near 1): the
    Clopper-Pearson interval of the fractional sum over E episodes holds the mean at >= 95 % - 3 MC s.e."""
    trials, rng = 400, np.random.default_rng(8)
    floor = 0.95 - 3 * np.sqrt(0.95 * 0.05 / trials)
    for a, b in ((2.0, 2.0), (0.3, 0.3), (8.0, 0.5), (0.5, 8.0)):
        for n in (10, 20):
            x = rng.beta(a, b, size=(trials, n))
            mean = a / (a + b)
            hits = 0
            for row in x:
                r = EpisodeChains({"s": row[:, None]}, np.ones(n, dtype=bool)).row("s", 0)
                hits += r["episode_lower"] <= mean <= r["episode_upper"]
            assert hits / trials >= floor, (a, b, n, hits / trials)
