"""Dirichlet posterior of P(φ): batched solves against Storm per draw, and the Beta marginal of the reference."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from perception_safety.evaluation.confusion.io import load_matrices
from perception_safety.verification.builder import AbstractSystem, ObservationModel, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.posterior import chain_skeleton, posterior_values, summarise
from perception_safety.verification.specs import BUILTIN_SPECS, check
from perception_safety.verification.sweep import run_sweep

from .conftest import REFERENCE


@pytest.fixture(scope="module")
def confusion():
    return load_matrices(REFERENCE)


def car(confusion, V, kind="class"):
    g = Geometry.reference(V)
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, V + 1))
    if kind == "class":
        counted = CountedObservations.for_class(confusion.counts("class"), confusion.class_labels, ["ped"],
                                                confusion.bin_edges)
    else:
        counted = CountedObservations.for_prop(confusion.counts("prop"), confusion.prop_labels, "ped",
                                               confusion.bin_edges)
    return g, system, counted


def test_skeleton_reproduces_the_point_chain(confusion):
    _, system, counted = car(confusion, 4)
    obs = counted.model()
    chain, sk = build_chain(system, obs), chain_skeleton(system, obs)
    data = sk.data(obs.probs)[0]
    dense_sk = np.zeros((sk.n_states, sk.n_states))
    np.add.at(dense_sk, (np.repeat(np.arange(sk.n_states), np.diff(sk.indptr)), sk.indices), data)
    np.testing.assert_allclose(dense_sk, chain.to_scipy().toarray(), atol=1e-15)


@pytest.mark.parametrize("kind", ["class", "prop"])
def test_batched_draws_equal_storm_on_the_same_draws(confusion, kind):
    _, system, counted = car(confusion, 5, kind)
    obs = counted.model()
    draws = counted.sample(np.random.default_rng(7), 4, 0.5)
    values = posterior_values(chain_skeleton(system, obs), draws, BUILTIN_SPECS)
    for d in range(draws.shape[0]):
        chain = build_chain(system, ObservationModel(obs.outcomes, draws[d], obs.bin_edges))
        for name, formula in BUILTIN_SPECS.items():
            want = check(chain, formula)[chain.initial_states]
            np.testing.assert_allclose(values[name][d], want, atol=1e-9, err_msg=f"{name}, draw {d}")


def test_cycles_are_solved_exactly():
    """A controller that can move back makes a strongly connected block: batched dense solve vs Storm."""
    n = 6

    def k(states, obs):
        fwd = np.minimum(states + 1, n - 1)
        back = np.maximum(states - 1, 0)
        out = np.where(obs == ("go",), fwd, np.where(obs == ("back",), back, states))
        return np.where(states >= n - 2, states, out)  # two absorbing ends: n-2 (bad), n-1 (goal)

    labels = {"goal": np.arange(n) == n - 1}
    system = AbstractSystem(n, k, lambda s: s * 1.0, labels, [0])
    counts = np.array([[[5, 1, 0], [2, 3, 0], [1, 2, 9]], [[8, 1, 0], [1, 1, 0], [1, 8, 9]]])
    counted = CountedObservations.for_prop(counts, ["go", "back", "stay"], "go", [(0, 3), (3, 10)], "nothing")
    obs = counted.model()
    draws = counted.sample(np.random.default_rng(1), 3, 0.5)
    vals = posterior_values(chain_skeleton(system, obs), draws, {"r": 'P=? [F "goal"]', "g": 'P=? [G !"goal"]'})
    for d in range(3):
        chain = build_chain(system, ObservationModel(obs.outcomes, draws[d], obs.bin_edges))
        want = check(chain, 'P=? [F "goal"]')[chain.initial_states]
        np.testing.assert_allclose(vals["r"][d], want, atol=1e-9)
        np.testing.assert_allclose(vals["g"][d], 1 - want, atol=1e-9)


def test_dirichlet_draws_follow_the_posterior_and_share_columns(confusion):
    _, _, counted = car(confusion, 1)
    draws = counted.sample(np.random.default_rng(0), 20_000, 0.5, "dirichlet")
    col = confusion.counts("class")[0][:, 0]  # bin 0, true ped: 31, 0, 127
    np.testing.assert_allclose(draws[:, 0, :].mean(axis=0), (col + 0.5) / (col.sum() + 1.5), atol=3e-3)
    np.testing.assert_allclose(draws.sum(axis=2), 1.0, atol=1e-12)
    split = counted.sample(np.random.default_rng(0), 20_000, 0.5, "split")
    hit = (31 + 0.5) / (158 + 1.0)  # Beta(31.5, 127.5); the rest (0, 127) split by Dirichlet(0.5, 127.5)
    want = [hit, (1 - hit) * 0.5 / 128.0, (1 - hit) * 127.5 / 128.0]
    np.testing.assert_allclose(split[:, 0, :].mean(axis=0), want, atol=3e-3)
    np.testing.assert_allclose(split.sum(axis=2), 1.0, atol=1e-12)


@pytest.mark.parametrize(("method", "rest"), [("split", 127.5), ("dirichlet", 128.0)])
def test_v1_credible_interval_is_the_beta_marginal_and_inside_the_interval_bound(confusion, method, rest):
    _, system, counted = car(confusion, 1)
    draws = counted.sample(np.random.default_rng(3), 20_000, 0.5, method)
    values = posterior_values(chain_skeleton(system, counted.model()), draws, {"phi": BUILTIN_SPECS["phi"]})
    s = summarise(values["phi"], 0.95)
    # P(ped | ped) in bin 0 (31 of 158; 127 missed): split = Jeffreys Beta(31 + 0.5, 127 + 0.5); the Dirichlet's
    # marginal Beta(31 + 0.5, 127 + 0.5 + 0 + 0.5) has one pseudo-count per other cell pulling towards 1/M
    want = beta.ppf([0.025, 0.975], 31.5, rest)
    tol = 4 * float(s.mc_error[0])
    assert 0 < s.mc_error[0] < 2e-3
    assert s.lower[0] == pytest.approx(want[0], abs=tol) and s.upper[0] == pytest.approx(want[1], abs=tol)
    from perception_safety.evaluation.intervals import clopper_pearson

    lo, hi = clopper_pearson(31, 158, 0.05 / 3)
    assert lo < s.lower[0] and s.upper[0] < hi  # the posterior band is narrower than the worst-case bound


def test_sweep_rows_carry_posterior_and_it_can_be_switched_off(confusion):
    cfg = VerificationConfig(max_speeds=[3], variants=["prop_by_distance"], true_envs={
        "ped": {"class": ["ped"], "prop": "ped"}}, posterior={"draws": 200})
    sweep = run_sweep(confusion, cfg)
    for r in sweep.results:
        assert 0 <= r["posterior_lower"] <= r["posterior_mean"] <= r["posterior_upper"] <= 1
        assert r["upper"] - r["lower"] >= r["posterior_upper"] - r["posterior_lower"] - 1e-12
    again = run_sweep(confusion, cfg)
    assert [r["posterior_lower"] for r in again.results] == [r["posterior_lower"] for r in sweep.results]
    off = run_sweep(confusion, cfg.model_copy(update={"posterior": cfg.posterior.model_copy(
        update={"enabled": False})}))
    assert "posterior_lower" not in off.results[0]
