"""Storm checks answered together (`storm_batch.run_all`: one call on the disjoint union of a round's chains) give,
chain by chain, what Storm gives on each chain alone, and what a numpy linear solve of the absorption
probabilities gives; errors and cyclic chains stay per chain."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification import specs
from perception_safety.verification.bounds import spec_bounds, spec_bounds_steps
from perception_safety.verification.builder import MarkovChain
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import IntervalChain
from perception_safety.verification.specs import check, check_steps
from perception_safety.verification.storm_batch import run_all

FORMULAS = ('P=? [F "a"]', 'P=? ["b" U "a"]', 'P=? [G !"a"]', 'P=? [(G !"a") & (G "b")]')


def random_chain(rng: np.random.Generator, n: int, cyclic: bool = False, absorbing_only: bool = False) -> MarkovChain:
    """States 0..n-1; each moves to 1-3 later states (and maybe itself), the last two are absorbing; ``cyclic``
    adds the cycle 0 -> 1 -> 0 (neither labelled ``a``); ``absorbing_only``: every state loops on itself."""
    rows = []
    for s in range(n):
        if absorbing_only or s >= n - 2:
            rows.append({s: 1.0})
            continue
        succ = rng.choice(np.arange(s + 1, n), size=min(int(rng.integers(1, 4)), n - s - 1), replace=False)
        targets = [*succ.tolist(), *([s] if rng.random() < 0.3 else [])]
        if cyclic and s < 2:
            targets = sorted({*targets, 1 - s})
        w = rng.random(len(targets)) + 0.05
        rows.append(dict(zip(targets, (w / w.sum()).tolist(), strict=True)))
    indptr, indices, data = [0], [], []
    for r in rows:
        for t in sorted(r):
            indices.append(t)
            data.append(r[t])
        indptr.append(len(indices))
    labels = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.7}
    labels["a"][n - 1] = True
    if cyclic:
        labels["a"][:2] = False
    return MarkovChain(np.array(indptr), np.array(indices), np.array(data), labels, np.array([0]))


def absorption(chain: MarkovChain, hold: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """P(hold U goal) by numpy: a linear solve on the states that can reach the goal through hold states."""
    p = chain.to_scipy().toarray()
    n = chain.n_states
    can = goal.copy()
    for _ in range(n):
        can = can | (hold & ((p > 0) @ can.astype(float) > 0))
    maybe = can & ~goal
    x = goal.astype(float)
    if maybe.any():
        q = p[np.ix_(maybe, maybe)]
        b = p[np.ix_(maybe, goal)].sum(axis=1)
        x[maybe] = np.linalg.solve(np.eye(int(maybe.sum())) - q, b)
    return x


def test_union_answers_equal_each_chain_alone_and_a_linear_solve():
    rng = np.random.default_rng(7)
    chains = [random_chain(rng, int(rng.integers(3, 40))) for _ in range(12)]
    chains.append(random_chain(rng, 5, absorbing_only=True))
    steps = [check_steps(c, f) for c in chains for f in FORMULAS]
    together = run_all(steps)
    assert all(o.error is None for o in together)
    for i, c in enumerate(chains):
        for j, f in enumerate(FORMULAS):
            assert np.array_equal(together[i * len(FORMULAS) + j].value, check(c, f)), (i, f)
        a, b = c.labels["a"], c.labels["b"]
        ones = np.ones(c.n_states, dtype=bool)
        np.testing.assert_allclose(together[i * len(FORMULAS)].value, absorption(c, ones, a), atol=1e-12)
        np.testing.assert_allclose(together[i * len(FORMULAS) + 1].value, absorption(c, b, a), atol=1e-12)
        np.testing.assert_allclose(together[i * len(FORMULAS) + 2].value, 1 - absorption(c, ones, a), atol=1e-12)


def test_lockstep_rounds_keep_each_computations_order_and_values():
    """Each computation asks its formulas one after the other; every round is answered by one union call."""
    rng = np.random.default_rng(3)
    chains = [random_chain(rng, 20) for _ in range(6)]

    def all_specs(c: MarkovChain):
        out = []
        for f in FORMULAS:
            out.append((yield from check_steps(c, f)))
        return out

    done = run_all([all_specs(c) for c in chains])
    for c, o in zip(chains, done, strict=True):
        for f, v in zip(FORMULAS, o.value, strict=True):
            assert np.array_equal(v, check(c, f))


def test_a_cyclic_chain_in_the_round_is_answered_alone_with_the_topological_solver():
    """Storm's acyclic solver refuses the union that holds a cyclic chain: every part is then answered alone (the
    cyclic one by the topological solver, marked cyclic as `check` marks it), the same numbers as alone."""
    rng = np.random.default_rng(11)
    plain = [random_chain(rng, 15) for _ in range(3)]
    cyclic = random_chain(rng, 15, cyclic=True)
    chains = [*plain, cyclic]
    done = run_all([check_steps(c, FORMULAS[0]) for c in chains])
    assert cyclic in specs._CYCLIC
    np.testing.assert_allclose(done[-1].value, absorption(cyclic, np.ones(15, dtype=bool), cyclic.labels["a"]),
                               atol=1e-10)
    for c, o in zip(plain, done[:-1], strict=True):
        assert np.array_equal(o.value, check(c, FORMULAS[0]))


def test_an_error_ends_only_its_own_computation():
    rng = np.random.default_rng(5)
    good, other = random_chain(rng, 10), random_chain(rng, 12)
    done = run_all([check_steps(good, FORMULAS[0]), check_steps(other, 'P=? [F "nope"]'),
                    check_steps(other, FORMULAS[1])])
    assert np.array_equal(done[0].value, check(good, FORMULAS[0]))
    assert isinstance(done[1].error, VerificationError) and "unknown label" in str(done[1].error)
    assert np.array_equal(done[2].value, check(other, FORMULAS[1]))
    with pytest.raises(VerificationError, match="unknown label"):
        check(other, 'P=? [F "nope"]')


def interval_of(chain: MarkovChain, rng: np.random.Generator, width: float) -> IntervalChain:
    """Intervals around the chain's probabilities (some lower bounds 0: the lifted path's case)."""
    lo = np.clip(chain.data - width * rng.random(chain.n_transitions), 0.0, 1.0)
    hi = np.clip(chain.data + width * rng.random(chain.n_transitions), 0.0, 1.0)
    lo[rng.random(chain.n_transitions) < 0.2] = 0.0
    return IntervalChain(chain.indptr, chain.indices, lo, hi, chain.labels, chain.initial_states)


def test_interval_bounds_together_equal_each_chain_alone():
    rng = np.random.default_rng(2)
    chains = [interval_of(random_chain(rng, int(rng.integers(4, 30))), rng, 0.05) for _ in range(8)]
    formulas = dict(zip(("f", "u", "g"), FORMULAS[:3], strict=True))
    done = run_all([spec_bounds_steps(c, formulas) for c in chains])
    for c, o in zip(chains, done, strict=True):
        alone = spec_bounds(c, formulas)
        for name in formulas:
            a, b = alone[name], o.value[name]
            assert (a.method, a.horizon, a.exact) == (b.method, b.horizon, b.exact)
            np.testing.assert_allclose(b.lower, a.lower, rtol=0, atol=1e-12)
            np.testing.assert_allclose(b.upper, a.upper, rtol=0, atol=1e-12)
            assert abs(a.residual - b.residual) <= 1e-12
