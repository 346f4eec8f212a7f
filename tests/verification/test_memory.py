"""Run-length-correlated misses: the independence test and the chain with one step of observation memory
(issue 24 item 9). Truth by an exact recursion over (cell, speed, last observation) written here."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.bounds import spec_bounds
from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.coverage import LABELS, markov_miss_sequences
from perception_safety.verification.interval_chain import build_interval_chain, decision_bins
from perception_safety.verification.memory import (
    DEPENDENT,
    INCONCLUSIVE,
    INDEPENDENT,
    MEMORY,
    ObservationRuns,
    assess,
    independence_tests,
    memory_counts,
    memory_system,
)
from perception_safety.verification.specs import check
from tests.markov_truth import true_hazard

HAZARD = 'P=? [F "past_k"]'
EDGES = [(0.0, 3.0), (3.0, 100.0)]


def system(V: int):
    return car_pedestrian_system(Geometry.reference(V), {"ped": True, "obs": False}, range(1, V + 1))


def runs_from_rates(r: float, q: float, scale: int = 1000) -> ObservationRuns:
    """One 'episode' whose pair counts are the transition probabilities times ``scale`` in both bins."""
    pairs = np.zeros((1, 2, 3, 3))
    pairs[0, :, 2, 2], pairs[0, :, 2, 0] = r * scale, (1 - r) * scale
    pairs[0, :, 0, 2], pairs[0, :, 0, 0] = q * scale, (1 - q) * scale
    return ObservationRuns(pairs, np.zeros((1, 2, 3)))


def counted_of(runs: ObservationRuns, clusters: bool = False) -> CountedObservations:
    per_ep = np.zeros((runs.pairs.shape[0], 2, 3, 3))
    per_ep[:, :, :, 0] = runs.marginal()
    return CountedObservations.for_class(per_ep.sum(axis=0), LABELS, ["ped"], EDGES, "runs",
                                         per_ep if clusters else None)


def emergency_stop(geometry: Geometry):
    """K: a seen pedestrian stops the car where it is (a stopped car stays); otherwise keep going."""
    def k(states: np.ndarray, y: tuple[str, ...]) -> np.ndarray:
        x, v = geometry.cell_speed(states)
        if "ped" in y:
            return np.asarray((x - 1) * (geometry.max_speed + 1), dtype=np.int64)  # (x, 0)
        return np.asarray((np.minimum(x + v, geometry.road_cells) - 1) * (geometry.max_speed + 1) + v, dtype=np.int64)
    return k


@pytest.mark.parametrize("V", [1, 2])
def test_memoryless_chain_understates_the_hazard_when_one_detection_suffices(V):
    """Emergency stop on any detection: the car passes k only if every look on the way misses. With misses in
    runs that is pi r^(n-1) (n looks, first at the rate pi, then r after a miss), far above pi^n."""
    r, q = 0.8, 0.1
    runs = runs_from_rates(r, q)
    counted = counted_of(runs)
    g = Geometry.reference(3)  # k = 7: from cell 1 at speed v the car looks at cells 1, 1 + v, ... <= 7
    sys_ = car_pedestrian_system(g, {"ped": True, "obs": False}, [V], controller=emergency_stop(g))
    s0 = sys_.initial_states[0]
    plain = check(build_chain(sys_, counted.model()), HAZARD)[s0]
    mem_counts, warnings = memory_counts(counted, runs, 0)
    assert not warnings
    mem_sys = memory_system(sys_, counted.model())
    mem = check(build_chain(mem_sys, mem_counts.model()), HAZARD)[mem_sys.initial_states[0]]
    pi = (r + q) / 2  # the marginal miss rate of the counts (both rows weigh 1000)
    n = (g.stop_cell - 1) // V + 1
    assert mem == pytest.approx(pi * r ** (n - 1), abs=1e-12)
    assert plain == pytest.approx(pi ** n, abs=1e-12)
    assert plain < mem / 5


@pytest.mark.parametrize("V", [2, 3])
def test_memory_chain_is_exact_for_the_braking_rule(V):
    """The braking rule needs every decision right (a series system): runs of hits help it, so here the
    memoryless chain overstates the hazard. The direction depends on the controller; the memory chain does not."""
    r, q = 0.8, 0.1
    runs = runs_from_rates(r, q)
    counted = counted_of(runs)
    first = runs.marginal()[0, 1, 2] / runs.marginal()[0, 1].sum()
    sys_ = system(V)
    plain = check(build_chain(sys_, counted.model()), HAZARD)[sys_.initial_states[-1]]
    mem_counts, _ = memory_counts(counted, runs, 0)
    mem_sys = memory_system(sys_, counted.model())
    mem = check(build_chain(mem_sys, mem_counts.model()), HAZARD)[mem_sys.initial_states[-1]]
    truth = true_hazard(V, V, first, r, q)
    assert mem == pytest.approx(truth, abs=1e-9)
    assert plain > truth + 0.05


def test_independence_test_sees_runs_and_not_scattered_misses():
    rng = np.random.default_rng(4)
    runs = ObservationRuns.from_sequences(markov_miss_sequences(rng, 30, 8, 2, 0.8, 0.1), 2, 3)
    tests = independence_tests(runs, hit=0)
    assert [t.verdict for t in tests] == [DEPENDENT, DEPENDENT]
    assert all(t.p_miss_after_miss > 0.6 > 0.2 > t.p_miss_after_hit for t in tests)
    assert all(t.episodes == 30 for t in tests)
    rng = np.random.default_rng(5)
    scattered = ObservationRuns.from_sequences(markov_miss_sequences(rng, 30, 8, 2, 0.3, 0.3), 2, 3)
    assert [t.verdict for t in independence_tests(scattered, hit=0)] == [INDEPENDENT, INDEPENDENT]


def test_pairs_are_counted_in_the_bin_of_the_later_frame_and_gaps_break_runs():
    runs = ObservationRuns.from_sequences([([1, 1, 0, -1, 0], [2, 2, 0, 2, 2])], 2, 3)
    assert runs.pairs[0, 1, 2, 2] == 1 and runs.pairs[0, 0, 2, 0] == 1 and runs.pairs.sum() == 2
    assert runs.first[0, 1, 2] == 1 and runs.first[0, 0, 2] == 1  # the frame after the gap starts a new run
    np.testing.assert_array_equal(runs.marginal()[0], [[1, 0, 1], [0, 0, 2]])


def test_memory_chain_from_episodes_estimates_the_truth_and_its_bounds_hold_it():
    r, q = 0.8, 0.1
    rng = np.random.default_rng(8)
    runs = ObservationRuns.from_sequences(markov_miss_sequences(rng, 150, 10, 2, r, q), 2, 3)
    counted = counted_of(runs, clusters=True)
    g = Geometry.reference(3)
    sys_ = car_pedestrian_system(g, {"ped": True, "obs": False}, [2], controller=emergency_stop(g))
    mem_counts, _ = memory_counts(counted, runs, 0)
    mem_sys = memory_system(sys_, counted.model())
    s0 = mem_sys.initial_states[0]
    truth = q / (1 - r + q) * r ** 3  # 4 looks (cells 1, 3, 5, 7), the first at the stationary rate
    est = check(build_chain(mem_sys, mem_counts.model()), HAZARD)[s0]
    plain = check(build_chain(sys_, counted.model()), HAZARD)[sys_.initial_states[0]]
    assert abs(est - truth) < 0.06 and plain < truth / 5  # sampling noise of pi r^3 from 150 episodes: ~0.02
    bins = decision_bins(mem_sys, mem_counts.model())
    b = spec_bounds(build_interval_chain(mem_sys, mem_counts.model(0.05, bins)), {"h": HAZARD})["h"]
    assert b.lower[s0] <= truth <= b.upper[s0]
    plain_b = spec_bounds(build_interval_chain(sys_, counted.model(0.05, decision_bins(sys_, counted.model()))),
                          {"h": HAZARD})["h"]
    assert plain_b.upper[sys_.initial_states[0]] < truth  # no interval width rescues the memoryless chain


def test_assessment_names_the_chain_to_use_or_inconclusive():
    rng = np.random.default_rng(4)
    runs = ObservationRuns.from_sequences(markov_miss_sequences(rng, 30, 8, 2, 0.8, 0.1), 2, 3)
    counted = counted_of(runs, clusters=True)
    a = assess(runs, counted, 0, [0, 1])
    assert a.status == MEMORY and len(a.warnings) == 2 and "runs" in a.warnings[0]
    one = ObservationRuns(runs.pairs[:1], runs.first[:1])  # a single episode: nothing to test with
    b = assess(one, counted_of(one, clusters=True), 0, [1])
    assert b.status == INCONCLUSIVE and b.decision_bins == (1,) and "cannot be tested" in b.warnings[0]
    scattered = ObservationRuns.from_sequences(markov_miss_sequences(np.random.default_rng(5), 30, 8, 2, 0.3, 0.3),
                                               2, 3)
    assert assess(scattered, counted_of(scattered), 0, [0, 1]).status == INDEPENDENT


def test_a_difference_without_spread_between_episodes_is_dependent_and_says_so():
    """Two identical episodes (miss, miss, hit, hit): zero standard error; the verdict and warning still read."""
    seq = (np.zeros(4, dtype=np.int64), np.array([2, 2, 0, 0]))
    runs = ObservationRuns.from_sequences([seq, seq], 1, 3)
    per_ep = np.zeros((2, 1, 3, 3))
    per_ep[:, :, :, 0] = runs.marginal()
    counted = CountedObservations.for_class(per_ep.sum(axis=0), LABELS, ["ped"], [(0.0, 100.0)], "runs", per_ep)
    (t,) = independence_tests(runs, hit=0)
    assert t.verdict == DEPENDENT and t.p_value is None
    a = assess(runs, counted, 0, [0])
    assert any("the same in every episode" in w for w in a.warnings)


def test_memory_chain_carries_a_posterior_that_holds_the_truth_and_a_point_verdict_reads_a_bound():
    """Issue 24 item 3: the memory chain's P(phi) comes with its posterior credible interval (Dirichlet draws of its
    conditional columns' counts, episodes through their design effect), and a requirement never reads its point."""
    from pydantic import TypeAdapter

    from perception_safety.evaluation.requirements import Requirement
    from perception_safety.evaluation.requirements import check as check_reqs
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.memory_check import MemoryData, check_memory

    r, q = 0.8, 0.1
    runs = ObservationRuns.from_sequences(markov_miss_sequences(np.random.default_rng(8), 150, 10, 2, r, q), 2, 3)
    counted = counted_of(runs, clusters=True)
    g = Geometry.reference(3)
    sys_ = car_pedestrian_system(g, {"ped": True, "obs": False}, [2], controller=emergency_stop(g))
    truth = q / (1 - r + q) * r ** 3  # as in the test above
    warnings: list[str] = []
    cfg = VerificationConfig(posterior={"draws": 400})
    m = check_memory(sys_, MemoryData(counted, runs, 0), {"h": HAZARD}, cfg, "v/e/V=3", warnings)
    row = m.row("h", 0)
    assert row["independence"] == MEMORY
    assert row["memory_posterior_lower"] <= truth <= row["memory_posterior_upper"]
    assert row["memory_posterior_lower"] <= row["memory_probability"] <= row["memory_posterior_upper"]
    assert 0 < row["memory_posterior_mc_error"] < 0.02
    # A requirement on this row with bound: point is judged on the conservative bound, never the point.
    results = {"verification": {"results": [{"variant": "v", "true_env": "e", "spec": "h", "max_speed": 3,
                                             "initial_speed": 2, "probability": 0.001, "clusters": 150, **row}]}}
    req = TypeAdapter(list[Requirement]).validate_python(
        [{"metric": "verification", "spec": "h", "at_most": row["memory_probability"] + 1e-9}])
    (v,) = check_reqs(req, results)
    assert v.status == "FAIL" and v.value == row["memory_upper"] and "upper bound" in v.detail
    no_bounds = {k: v for k, v in row.items() if k not in ("memory_lower", "memory_upper")}
    results["verification"]["results"][0] = {**results["verification"]["results"][0], **no_bounds,
                                             "memory_lower": None, "memory_upper": None}
    (v,) = check_reqs(req, results)
    assert v.value == row["memory_posterior_upper"] and "posterior" in v.detail
