"""Specs φ1-φ3 on the car–pedestrian chain; LTL vs PCTL; formula errors."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import class_observations
from perception_safety.verification.specs import BUILTIN_SPECS, check, resolve_specs

LABELS = ["ped", "obs", "empty"]
# P(pred | true): a detector that sees a pedestrian with 0.8, mistakes an obstacle for one with 0.1
M = np.array([[0.8, 0.1, 0.0], [0.05, 0.85, 0.0], [0.15, 0.05, 1.0]])


def chain_for(env: str, V: int = 3):
    g = Geometry.reference(V)
    system = car_pedestrian_system(g, {"ped": env == "ped", "obs": env == "obs"}, range(1, V + 1))
    return g, build_chain(system, class_observations(M, LABELS, [env], None))


def at_start(g, values):
    return np.array([values[g.index(1, v)] for v in range(1, g.max_speed + 1)])


def test_ltl_conjunction_equals_pctl_invariant():
    g, chain = chain_for("obs")
    ltl = check(chain, BUILTIN_SPECS["phi"])
    pctl = check(chain, 'P=? [G (("ped" | !"stop_at_k") & (!"ped" | !"at_or_past_k" | "stop_at_k") '
                        '& !("stopped" & "before_k"))]')
    np.testing.assert_allclose(ltl, pctl, atol=1e-12)
    # and the LTL negation form of a safety invariant equals 1 - P(F bad) (PCTL)
    neg = check(chain, 'P=? [!(F ("stop_at_k" & !"ped"))]')
    reach = check(chain, 'P=? [F ("stop_at_k" & !"ped")]')
    np.testing.assert_allclose(neg, 1 - reach, atol=1e-12)
    assert 0 < at_start(g, neg)[0] < 1


def test_phi_values_follow_their_meaning():
    g, ped = chain_for("ped")
    stop = at_start(g, check(ped, BUILTIN_SPECS["stop_at_k"]))
    np.testing.assert_allclose(at_start(g, check(ped, BUILTIN_SPECS["phi1"])), 1.0)  # φ1 is vacuous with ped
    # with a pedestrian, φ2 holds iff the car reaches (k, 0): the only way to be at k or beyond safely
    np.testing.assert_allclose(at_start(g, check(ped, BUILTIN_SPECS["phi2"])), stop, atol=1e-12)
    np.testing.assert_allclose(at_start(g, check(ped, BUILTIN_SPECS["phi3"])), 1.0)  # never stops before k
    # v0 = 1: only the decision at x = k - 1 matters, so P = P(ped | ped)
    assert stop[0] == pytest.approx(0.8, abs=1e-12)
    # v0 = 2 needs two braking decisions: P = 0.8^2
    assert stop[1] == pytest.approx(0.64, abs=1e-12)

    g, obs = chain_for("obs")
    phi1 = at_start(g, check(obs, BUILTIN_SPECS["phi1"]))
    np.testing.assert_allclose(phi1, 1 - at_start(g, check(obs, BUILTIN_SPECS["stop_at_k"])), atol=1e-12)
    assert phi1[0] == pytest.approx(1 - 0.1, abs=1e-12)  # P(ped | obs) = 0.1 at k - 1 makes it stop
    np.testing.assert_allclose(at_start(g, check(obs, BUILTIN_SPECS["phi2"])), 1.0)


def test_unknown_label_is_named():
    _, chain = chain_for("ped")
    with pytest.raises(VerificationError, match=r"unknown label\(s\) \['pedestrian'\]"):
        check(chain, 'P=? [F "pedestrian"]')


def test_unparsable_and_qualitative_formulas():
    _, chain = chain_for("ped")
    with pytest.raises(VerificationError, match="cannot parse formula"):
        check(chain, 'P=? [F "ped"')
    with pytest.raises(VerificationError, match="quantitative"):
        check(chain, 'P>=0.5 [F "stop_at_k"]')


def test_resolve_specs():
    assert resolve_specs(["phi1", "mine"], {"mine": 'P=? [F "ped"]'}) == {
        "phi1": BUILTIN_SPECS["phi1"], "mine": 'P=? [F "ped"]'}
    with pytest.raises(VerificationError, match="unknown spec 'phi9'"):
        resolve_specs(["phi9"])


def test_acyclic_solver_first_and_topological_when_storm_finds_a_cycle():
    """Issue 27: the acyclic solver is tried first; a chain with a cycle falls back to the topological solver and
    gets the exact answer of the hand-solved system (x0 = 0.5 x1, x1 = 0.5 x0 + 0.5: x0 = 1/3, x1 = 2/3)."""
    from perception_safety.verification import specs
    from perception_safety.verification.builder import MarkovChain

    cyclic = MarkovChain(
        indptr=np.array([0, 2, 4, 5, 6]),
        indices=np.array([1, 2, 0, 3, 2, 3]),
        data=np.array([0.5, 0.5, 0.5, 0.5, 1.0, 1.0]),
        labels={"goal": np.array([0, 0, 0, 1], dtype=bool)},
        initial_states=np.array([0]),
    )
    assert cyclic not in specs._CYCLIC
    np.testing.assert_allclose(check(cyclic, 'P=? [F "goal"]'), [1 / 3, 2 / 3, 0, 1], atol=1e-10)
    assert cyclic in specs._CYCLIC
    # the car-pedestrian chain is acyclic: the acyclic solver's answer equals the topological one
    _, chain = chain_for("ped", 6)
    fast = check(chain, BUILTIN_SPECS["stop_at_k"])
    assert chain not in specs._CYCLIC
    specs._CYCLIC.add(chain)
    np.testing.assert_allclose(check(chain, BUILTIN_SPECS["stop_at_k"]), fast, rtol=0, atol=1e-12)
