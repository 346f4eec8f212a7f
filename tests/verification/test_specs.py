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
