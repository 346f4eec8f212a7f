"""Storm's interval bounds against an independent robust value iteration written here (numpy), to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.confusion.io import load_matrices
from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.verification.bounds import certify, robust_bellman, spec_bounds
from perception_safety.verification.builder import AbstractSystem, ObservationModel, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import (
    IntervalChain,
    build_interval_chain,
    decision_bins,
    interval_storm_model,
)
from perception_safety.verification.reach import until_structure
from perception_safety.verification.specs import BUILTIN_SPECS, check

from .conftest import REFERENCE


def robust_step(lo: np.ndarray, hi: np.ndarray, x: np.ndarray, maximise: bool) -> np.ndarray:
    """One Bellman step: per row, the extreme of Σ p x over {lo ≤ p ≤ hi, Σ p = 1} (greedy on sorted x)."""
    out = np.empty(len(x))
    order = np.argsort(-x if maximise else x, kind="stable")
    for s in range(len(x)):
        p = lo[s].copy()
        budget = 1.0 - p.sum()
        for t in order:
            add = min(hi[s, t] - lo[s, t], budget)
            p[t] += add
            budget -= add
        out[s] = p @ x
    return out


def robust_until(lo, hi, hold, goal, maximise, iterations=20_000):
    """Least fixed point of the robust Bellman operator for P(hold U goal), iterated from 0."""
    x = goal.astype(float)
    for _ in range(iterations):
        new = np.where(goal, 1.0, np.where(hold, robust_step(lo, hi, x, maximise), 0.0))
        if np.max(np.abs(new - x)) < 1e-14:
            break
        x = new
    return x


def robust_globally(lo, hi, safe, maximise, iterations=20_000):
    """Greatest fixed point for P(G safe), iterated from 1 (no complement trick)."""
    y = safe.astype(float)
    for _ in range(iterations):
        new = np.where(safe, robust_step(lo, hi, y, maximise), 0.0)
        if np.max(np.abs(new - y)) < 1e-14:
            break
        y = new
    return y


def random_chain(rng, n, cyclic=False):
    """Forward edges (plus self-loops when ``cyclic``), the last two states absorbing; some lower bounds 0."""
    lo, hi = np.zeros((n, n)), np.zeros((n, n))
    for s in range(n - 2):
        k = rng.integers(1, 4)
        succ = rng.choice(np.arange(s + 1, n), size=min(k, n - s - 1), replace=False)
        p = rng.dirichlet(np.ones(len(succ)))
        if cyclic and rng.random() < 0.6:
            loop = rng.uniform(0, 0.5)
            succ, p = np.append(succ, s), np.append(p * (1 - loop), loop)
        width = rng.uniform(0, 0.25, len(succ))
        lo[s, succ] = np.where(rng.random(len(succ)) < 0.4, 0.0, np.clip(p - width, 0, 1))
        hi[s, succ] = np.clip(p + width, 0, 1)
        hi[s, s] = min(hi[s, s], 0.7)  # p[s, s] <= 0.5: paths leave a self-loop geometrically fast
    for s in (n - 2, n - 1):
        lo[s, s] = hi[s, s] = 1.0
    rows, cols = np.nonzero(hi > 0)
    labels = {"a": rng.random(n) < 0.8, "g": np.zeros(n, dtype=bool)}
    labels["g"][n - 1] = True
    labels["g"][rng.integers(0, n - 2)] = True
    chain = IntervalChain(
        indptr=np.searchsorted(rows, np.arange(n + 1)), indices=cols, lower=lo[rows, cols], upper=hi[rows, cols],
        labels=labels, initial_states=np.array([0]),
    )
    return chain, lo, hi


FORMULAS = {
    "reach": 'P=? [F "g"]',
    "until": 'P=? ["a" U "g"]',
    "safe": 'P=? [G !"g"]',
    "conj": 'P=? [(G "a") & (G !"g" | "a")]',
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cyclic", [False, True])
def test_storm_bounds_equal_independent_robust_value_iteration(seed, cyclic):
    rng = np.random.default_rng(seed)
    chain, lo, hi = random_chain(rng, 9, cyclic)
    bounds = spec_bounds(chain, FORMULAS, horizon=4000)
    a, g = chain.labels["a"], chain.labels["g"]
    everywhere = np.ones(len(a), dtype=bool)
    expected = {
        "reach": (robust_until(lo, hi, everywhere, g, False), robust_until(lo, hi, everywhere, g, True)),
        "until": (robust_until(lo, hi, a, g, False), robust_until(lo, hi, a, g, True)),
        "safe": (robust_globally(lo, hi, ~g, False), robust_globally(lo, hi, ~g, True)),
        "conj": (robust_globally(lo, hi, a & (~g | a), False), robust_globally(lo, hi, a & (~g | a), True)),
    }
    for name, (want_lo, want_hi) in expected.items():
        b = bounds[name]
        assert b.exact or cyclic
        np.testing.assert_allclose(b.lower, want_lo, atol=1e-9, err_msg=name)
        np.testing.assert_allclose(b.upper, want_hi, atol=1e-9, err_msg=name)
        assert b.residual < 1e-12


def test_certified_fast_path_equals_the_exact_bounded_path(monkeypatch):
    """Storm's unbounded until on the lifted chain, certified in numpy, vs bounded until on the original."""
    import perception_safety.verification.bounds as bounds_mod

    for seed in range(4):
        chain, _, _ = random_chain(np.random.default_rng(20 + seed), 10, cyclic=False)
        fast = spec_bounds(chain, FORMULAS)
        monkeypatch.setattr(bounds_mod, "CERTIFY_TOLERANCE", -1.0)  # every certificate "fails"
        exact = spec_bounds(chain, FORMULAS)
        monkeypatch.undo()
        for name in FORMULAS:
            assert fast[name].method == "certified" and fast[name].residual < 1e-12
            assert exact[name].method == "bounded" and exact[name].residual == 0.0 and exact[name].exact
            np.testing.assert_allclose(fast[name].lower, exact[name].lower, atol=1e-12)
            np.testing.assert_allclose(fast[name].upper, exact[name].upper, atol=1e-12)


def test_certificate_rejects_a_wrong_candidate():
    chain, lo, hi = random_chain(np.random.default_rng(5), 10, cyclic=False)
    g = chain.labels["g"]
    truth = robust_until(lo, hi, np.ones(10, dtype=bool), g, True)
    st = until_structure(chain.indptr, chain.indices, np.ones(10, dtype=bool), g)
    assert st.maybe.any() and not st.cyclic
    assert certify(chain, truth, st.maybe, st.depth, True) < 1e-12
    wrong = truth.copy()
    wrong[np.flatnonzero(st.maybe)[0]] += 0.01
    assert certify(chain, wrong, st.maybe, st.depth, True) >= 0.01 - 1e-12
    np.testing.assert_allclose(robust_bellman(chain, truth, True)[st.maybe], truth[st.maybe], atol=1e-12)


def test_short_cyclic_horizons_stay_sound():
    chain, lo, hi = random_chain(np.random.default_rng(3), 10, cyclic=True)
    assert until_structure(chain.indptr, chain.indices, np.ones(10, dtype=bool), chain.labels["g"]).cyclic
    everywhere = np.ones(10, dtype=bool)
    truth_lo = robust_until(lo, hi, everywhere, chain.labels["g"], False)
    truth_hi = robust_until(lo, hi, everywhere, chain.labels["g"], True)
    b = spec_bounds(chain, {"reach": 'P=? [F "g"]'}, horizon=3)["reach"]
    assert not b.exact and b.residual > 0
    assert np.all(b.lower <= truth_lo + 1e-12) and np.all(b.upper >= truth_hi - 1e-12)


def test_storm_refuses_unbounded_until_with_zero_lower_bounds():
    """Why the bounded formulation exists: Storm 2.0 needs graph preservation for unbounded until."""
    import stormpy

    chain, _, _ = random_chain(np.random.default_rng(0), 6)
    assert (chain.lower == 0).any()
    model = interval_storm_model(chain)
    prop = stormpy.parse_properties('P=? [F "g"]')[0]
    with pytest.raises(RuntimeError, match="graph-preservation"):
        stormpy.model_checking(model, prop, uncertainty_resolution_mode=stormpy.UncertaintyResolutionMode.MINIMIZE)


def test_unsupported_formula_shapes_are_named_not_guessed():
    chain, _, _ = random_chain(np.random.default_rng(1), 6)
    out = spec_bounds(chain, {"next": 'P=? [X "g"]', "bad": 'P=? [F "nope"]', "ok": 'P=? [F "g"]'})
    assert isinstance(out["next"], VerificationError) and "F, G, U" in str(out["next"])
    assert isinstance(out["bad"], VerificationError) and "unknown label 'nope'" in str(out["bad"])
    assert not isinstance(out["ok"], VerificationError)


def two_state_system() -> tuple[AbstractSystem, ObservationModel]:
    def k(states, obs):
        return np.where(obs == ("go",), np.minimum(states + 1, 2), states)

    system = AbstractSystem(3, k, lambda s: np.zeros(len(s)), {"end": np.arange(3) == 2}, [0])
    obs = ObservationModel((("go",), ("stay",), ("also_go",)), [0.5, 0.5, 0.0], None, "toy",
                           lower=[0.3, 0.2, 0.0], upper=[0.7, 0.6, 0.2])
    return system, obs


def test_interval_chain_sums_intervals_per_successor_and_caps_at_one():
    system, obs = two_state_system()
    k = system.controller
    system = AbstractSystem(3, lambda s, o: np.where(o == ("stay",), s, k(s, ("go",))), system.distance_m,
                            system.labels, [0])
    obs = ObservationModel(obs.outcomes, obs.probs, None, "toy", lower=obs.lower, upper=[0.7, 0.6, 0.5])
    chain = build_interval_chain(system, obs)
    # state 0: go and also_go both lead to 1: [0.3 + 0, min(1, 0.7 + 0.5)]; stay: [0.2, 0.6]
    assert list(chain.indices[:2]) == [0, 1]
    np.testing.assert_allclose(chain.lower[:2], [0.2, 0.3])
    np.testing.assert_allclose(chain.upper[:2], [0.6, 1.0])
    # the never-seen observation keeps its transition in the interval chain (lower 0, upper > 0)
    point = build_chain(system, ObservationModel(obs.outcomes, [0.5, 0.5, 0.0], None))
    assert chain.n_transitions == point.n_transitions  # same successors here; values differ


def test_interval_outside_estimate_is_rejected():
    with pytest.raises(VerificationError, match="does not hold its estimate"):
        ObservationModel((("a",), ("b",)), [0.5, 0.5], None, "toy", lower=[0.6, 0.1], upper=[0.9, 0.9])


@pytest.fixture(scope="module")
def confusion():
    return load_matrices(REFERENCE)


def test_reference_v1_band_is_clopper_pearson_of_bin0_ped_given_ped(confusion):
    g = Geometry.reference(1)
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, [1])
    counted = CountedObservations.for_class(confusion.counts("class"), confusion.class_labels, ["ped"],
                                            confusion.bin_edges)
    assert counted.comparisons == 3
    bins = decision_bins(system, counted.model())
    assert bins.tolist() == [0]  # V = 1: every decision is taken within 10 m of the crosswalk
    obs = counted.model(0.05, bins)
    b = spec_bounds(build_interval_chain(system, obs), {"phi": BUILTIN_SPECS["phi"]})["phi"]
    lo, hi = clopper_pearson(31, 158, 0.05 / 3)
    s0 = g.index(1, 1)
    assert b.exact
    assert b.lower[s0] == pytest.approx(float(lo), abs=1e-12)
    assert b.upper[s0] == pytest.approx(float(hi), abs=1e-12)
    p = check(build_chain(system, obs), BUILTIN_SPECS["phi"])[s0]
    assert p == pytest.approx(31 / 158, abs=1e-12) and lo < p < hi


def test_simultaneous_level_splits_alpha_over_the_bins_the_chain_decides_in(confusion):
    """Issue 24 item 7: M = labels x columns x decision bins, so the chain's intervals hold jointly at 1 - alpha."""
    g = Geometry.reference(5)  # road of 19 cells, crosswalk 17: decisions at 1..16 m -> bins [0, 10) and [10, 20)
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, 6))
    counted = CountedObservations.for_class(confusion.counts("class"), confusion.class_labels, ["ped"],
                                            confusion.bin_edges)
    bins = decision_bins(system, counted.model())
    assert bins.tolist() == [0, 1]
    assert counted.per_interval_alpha(0.05, bins) == pytest.approx(0.05 / 6)
    assert counted.per_interval_alpha(0.05) == pytest.approx(0.05 / 30)  # default: every bin of the matrices
    lo, hi = counted.intervals(0.05, bins)
    col = confusion.counts("class")[1, :, 0]
    want = clopper_pearson(col, np.full(3, col.sum()), 0.05 / 6)
    np.testing.assert_allclose(lo[1], want[0], atol=0)
    np.testing.assert_allclose(hi[1], want[1], atol=0)


def test_counted_intervals_are_per_column_clopper_pearson_and_products_for_two_objects(confusion):
    counts = confusion.counts("class")
    one = CountedObservations.for_class(counts, confusion.class_labels, ["ped"], confusion.bin_edges)
    lo, hi = one.intervals(0.05, [0])
    col = counts[:, :, 0]  # true ped, every bin
    want_lo, want_hi = clopper_pearson(col, col.sum(axis=1, keepdims=True) + 0 * col, 0.05 / 3)
    np.testing.assert_allclose(lo, want_lo, atol=0)
    np.testing.assert_allclose(hi, want_hi, atol=0)
    two = CountedObservations.for_class(counts, confusion.class_labels, ["ped", "obs"], confusion.bin_edges)
    assert two.comparisons == 6  # 3 labels x 2 distinct true columns
    lo2, hi2 = two.intervals(0.05, [0])
    p2 = two.probabilities()
    assert np.all(lo2 <= p2) and np.all(p2 <= hi2)
    a_lo, a_hi = clopper_pearson(counts[0, 0, 0], counts[0, :, 0].sum(), 0.05 / 6)
    b_lo, b_hi = clopper_pearson(counts[0, 2, 1], counts[0, :, 1].sum(), 0.05 / 6)
    o = two.outcomes.index(("ped", "empty"))
    assert lo2[0, o] == pytest.approx(a_lo * b_lo, rel=1e-12) and hi2[0, o] == pytest.approx(a_hi * b_hi, rel=1e-12)
    empty = CountedObservations.for_prop(np.zeros((1, 2, 2)), ["a", "none"], "a", [(0, 1)], "none")
    lo0, hi0 = empty.intervals(0.05)
    assert lo0.tolist() == [[0.0, 0.0]] and hi0.tolist() == [[1.0, 1.0]]  # n = 0: [0, 1]
