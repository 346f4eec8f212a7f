"""The built-in car–pedestrian chain against an independent construction solved with scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, braking_successors, car_pedestrian_system
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import class_observations, prop_observations
from perception_safety.verification.specs import BUILTIN_SPECS, check


def independent_stop_probability(V: int, p_see: list[float], bin_size: float = 10.0) -> dict[int, float]:
    """P(reach (k, 0)) from (1, v0), written from DESIGN.md's rules with plain loops and a sparse solve.

    ``p_see[b]`` is the probability that the observation in distance bin ``b`` contains the pedestrian.
    """
    N, k = V * (V + 1) // 2 + 4, V * (V + 1) // 2 + 1
    states = [(x, v) for x in range(1, N + 1) for v in range(V + 1)]
    idx = {s: i for i, s in enumerate(states)}
    P = sp.lil_matrix((len(states), len(states)))
    for (x, v), i in idx.items():
        if (x, v) == (k, 0):
            P[i, i] = 1.0
            continue
        q = p_see[int(abs((k + 1) - x) // bin_size)]
        seen = (x, v)  # a stopped car, or one past k, stays put
        if v > 0 and x <= k:
            seen = (min(x + v, N), v if x + v <= k - v * (v + 1) / 2 else v - 1)
        unseen = (min(x + v, N), v)
        P[i, idx[seen]] += q
        P[i, idx[unseen]] += 1 - q
    P = P.tocsr()
    goal = idx[(k, 0)]
    # absorbing states (self-loop 1) keep their value (1 at the goal, else 0); every other state is
    # transient, so I - P restricted to them is non-singular
    absorbing = np.isclose(P.diagonal(), 1.0)
    maybe = np.flatnonzero(~absorbing)
    x = np.zeros(len(states))
    x[goal] = 1.0
    A = sp.eye(len(maybe)) - P[maybe][:, maybe]
    b = np.asarray(P[maybe][:, [goal]].todense()).ravel()
    x[maybe] = sla.spsolve(A.tocsc(), b)
    return {v0: float(x[idx[(1, v0)]]) for v0 in range(1, V + 1)}


def storm_stop(geometry: Geometry, obs) -> np.ndarray:
    V = geometry.max_speed
    chain = build_chain(car_pedestrian_system(geometry, {"ped": True}, range(1, V + 1)), obs)
    values = check(chain, BUILTIN_SPECS["stop_at_k"])
    return np.array([values[geometry.index(1, v0)] for v0 in range(1, V + 1)])


@pytest.mark.parametrize("V", [1, 2, 4, 6, 10])
@pytest.mark.parametrize("kind", ["class", "prop"])
def test_storm_matches_independent_solve(reference, V, kind):
    ref = reference[kind]
    j = ref["labels"].index("ped")
    rows_with_ped = [i for i, lab in enumerate(ref["labels"]) if "ped" in lab.split(",")]
    p_see = ref["per_bin"][:, rows_with_ped, j].sum(axis=1).tolist()
    expected = independent_stop_probability(V, p_see)
    make = class_observations if kind == "class" else prop_observations
    env = ["ped"] if kind == "class" else "ped"
    got = storm_stop(Geometry.reference(V), make(ref["per_bin"], ref["labels"], env, reference["edges"]))
    np.testing.assert_allclose(got, [expected[v] for v in range(1, V + 1)], rtol=0, atol=1e-9)


def test_storm_matches_independent_solve_pooled_and_two_objects():
    """Two true pedestrians (Definition 4: product): sees a pedestrian unless both are missed."""
    labels = ["ped", "obs", "empty"]
    m = np.array([[0.7, 0.1, 0.0], [0.1, 0.8, 0.0], [0.2, 0.1, 1.0]])
    V = 4
    expected = independent_stop_probability(V, [1 - (1 - 0.7) ** 2] * 30)
    got = storm_stop(Geometry.reference(V), class_observations(m, labels, ["ped", "ped"], None))
    np.testing.assert_allclose(got, [expected[v] for v in range(1, V + 1)], atol=1e-9)


def test_v1_stop_probability_is_recall_of_bin_before_crosswalk(reference):
    for kind in ("class", "prop"):
        ref = reference[kind]
        j = ref["labels"].index("ped")
        make = class_observations if kind == "class" else prop_observations
        env = ["ped"] if kind == "class" else "ped"
        got = storm_stop(Geometry.reference(1), make(ref["per_bin"], ref["labels"], env, reference["edges"]))
        # the only decision is taken at x = k - 1 = 1, 2 m before the crosswalk: bin [0, 10)
        assert got[0] == pytest.approx(ref["counts"][0, j, j] / ref["counts"][0, :, j].sum(), abs=1e-12)
    assert reference["class"]["counts"][0, 0, 0] / reference["class"]["counts"][0, :, 0].sum() == pytest.approx(
        31 / 158
    )


@pytest.mark.parametrize("kind", ["class", "prop"])
def test_monotone_in_speed_and_distance_beats_pooled(reference, kind):
    ref = reference[kind]
    make = class_observations if kind == "class" else prop_observations
    env = ["ped"] if kind == "class" else "ped"
    for V in (3, 6, 8):
        g = Geometry.reference(V)
        by_distance = storm_stop(g, make(ref["per_bin"], ref["labels"], env, reference["edges"]))
        pooled = storm_stop(g, make(ref["pooled"], ref["labels"], env, None))
        assert np.all(np.diff(by_distance) <= 1e-15)
        assert np.all(np.diff(pooled) <= 1e-15)
        assert np.all(by_distance >= pooled - 1e-15)
        assert by_distance[0] > pooled[0]


def test_reference_geometry_and_controller():
    g = Geometry.reference(3)
    assert (g.road_cells, g.stop_cell, g.crosswalk_cell) == (10, 7, 8)
    s = np.array([g.index(x, v) for x, v in [(1, 3), (2, 2), (5, 2), (6, 1), (7, 0), (8, 2), (10, 3), (3, 0)]])
    seen = [g.describe(int(t)) for t in braking_successors(g, s, True)]
    unseen = [g.describe(int(t)) for t in braking_successors(g, s, False)]
    # (1,3): 1+3 <= 7-6 false -> brake; (2,2): 4 <= 4 keep; (5,2): brake; (6,1): 7 <= 6 false -> (7,0)
    assert seen == ["(x=4, v=2)", "(x=4, v=2)", "(x=7, v=1)", "(x=7, v=0)", "(x=7, v=0)", "(x=8, v=2)",
                    "(x=10, v=3)", "(x=3, v=0)"]
    assert unseen == ["(x=4, v=3)", "(x=4, v=2)", "(x=7, v=2)", "(x=7, v=1)", "(x=7, v=0)", "(x=10, v=2)",
                      "(x=10, v=3)", "(x=3, v=0)"]
    np.testing.assert_array_equal(g.distance_m(s), [7, 6, 3, 2, 1, 0, 2, 5])


def test_distance_beyond_last_bin_is_an_error(reference):
    ref = reference["class"]
    g = Geometry.reference(14)  # the car starts 106 m before the crosswalk; bins end at 100 m
    with pytest.raises(VerificationError, match=r"no confusion-matrix bin holds distance 106 m of state \(x=1, v=0\)"):
        build_chain(car_pedestrian_system(g, {"ped": True}, [1]),
                    class_observations(ref["per_bin"], ref["labels"], ["ped"], reference["edges"]))


def test_geometry_rejects_bad_values():
    with pytest.raises(VerificationError, match="stop_cell"):
        Geometry(max_speed=2, road_cells=5, stop_cell=7, crosswalk_cell=3)
    with pytest.raises(VerificationError, match="cell_length_m"):
        Geometry(max_speed=2, road_cells=5, stop_cell=2, crosswalk_cell=3, cell_length_m=0.0)
    with pytest.raises(VerificationError, match="initial speeds"):
        car_pedestrian_system(Geometry.reference(2), {"ped": True}, [3])


@settings(max_examples=15, deadline=None)
@given(V=st.integers(1, 5), recall=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
       confusion=st.floats(0.0, 1.0))
def test_storm_matches_independent_solve_random_detectors(V, recall, confusion):
    """Random per-bin recall; the rest of the pedestrian column split between obs and empty."""
    p = np.zeros((6, 3, 3))
    for b, r in enumerate(recall):
        p[b, :, 0] = [r, (1 - r) * confusion, (1 - r) * (1 - confusion)]
        p[b, :, 1] = [0.0, 1.0, 0.0]
        p[b, :, 2] = [0.0, 0.0, 1.0]
    edges = [(10.0 * b, 10.0 * (b + 1)) for b in range(6)]
    expected = independent_stop_probability(V, recall)
    got = storm_stop(Geometry.reference(V), class_observations(p, ["ped", "obs", "empty"], ["ped"], edges))
    np.testing.assert_allclose(got, [expected[v] for v in range(1, V + 1)], atol=1e-9)
