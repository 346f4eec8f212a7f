"""The sweep with every chain's Storm checks answered together equals each chain computed alone (Storm per chain,
one check at a time: the path before issue 27), with episodes, observation runs and a skipped combination; and the
posterior's all-formulas solve equals the formula-by-formula one and a numpy linear solve."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.controllers import resolve_controller
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.posterior import summarise, summarise_many
from perception_safety.verification.reach import until_structure
from perception_safety.verification.specs import resolve_specs
from perception_safety.verification.storm_batch import run
from perception_safety.verification.sweep_chain import Combo, chain_steps
from perception_safety.verification.sweep_each import sweep_each
from perception_safety.verification.until_solve import (
    component_levels,
    solvable,
    solve_until_batch,
    solve_until_many,
)

from .test_counted_clusters import _split_reference
from .test_storm_batch import absorption, random_chain


def runs_for(n_episodes: int, n_bins: int, n_labels: int, seed: int) -> ObservationRuns:
    """Per episode a sequence of the pedestrian column's observations with runs of misses (label 0 = the hit)."""
    rng = np.random.default_rng(seed)
    seqs = []
    for _ in range(n_episodes):
        labels, miss = [], False
        for _ in range(60):
            miss = rng.random() < (0.7 if miss else 0.2)
            labels.append(int(rng.integers(1, n_labels)) if miss else 0)
        seqs.append((np.sort(rng.integers(0, n_bins, size=60)), labels))
    return ObservationRuns.from_sequences(seqs, n_bins, n_labels)


def close(a, b, path=""):
    """Equal, floats within 1e-12 (Storm's interval solver may iterate further on a union: docs/performance.md)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            close(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= 1e-12, (path, a, b)
    else:
        assert a == b, (path, a, b)


@pytest.fixture(scope="module")
def swept():
    dc, eps = _split_reference(12)
    n_bins = len(dc.bin_edges)
    runs = {("prop_by_distance", "ped"): runs_for(12, n_bins, len(dc.prop_labels), 1),
            ("prop", "ped"): runs_for(12, 1, len(dc.prop_labels), 2)}
    cfg = VerificationConfig(max_speeds=[1, 2, 3], posterior={"draws": 200}, true_envs={
        "ped": {"class": ["ped"], "prop": "ped"}, "ghost": {"class": ["ghost"], "prop": "ghost"},
        "obs": {"class": ["obs"], "prop": "obs"}})
    return dc, eps, runs, cfg, sweep_each(dc, cfg, None, "ref", eps, runs)


def test_batched_sweep_equals_every_chain_alone(swept):
    dc, eps, runs, cfg, (result, skipped) = swept
    specs = resolve_specs(cfg.specs, cfg.custom_specs)
    rows, records, warnings, errors = [], [], [], {}
    for env_name in cfg.true_envs:
        for variant in cfg.variants:
            try:
                combo = Combo.make(dc, cfg, variant, env_name, specs, resolve_controller(cfg.controller), "ref",
                                   eps, runs)
            except VerificationError as exc:
                errors[f"{env_name}/{variant}"] = str(exc)
                continue
            for V in cfg.max_speeds:
                done = run(chain_steps(combo, V))  # each Storm query on its own chain, one after the other
                rows += done.rows
                records.append({k: v for k, v in done.record.items() if not k.endswith("_seconds")})
                warnings += [w for w in done.warnings if w not in warnings]
    assert skipped == errors and set(skipped) == {f"ghost/{v}" for v in cfg.variants}
    assert len(result.results) == len(rows) > 0
    close(list(result.results), rows)
    close([{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in result.chains], records)
    assert list(result.warnings) == warnings
    assert any(r.get("independence") == "memory" for r in rows) and any("episode_mean" in r for r in rows)


@pytest.mark.parametrize("cyclic", [False, True])
def test_posterior_all_formulas_at_once_equals_formula_by_formula_and_a_linear_solve(cyclic):
    """Random chains (with zero-probability transitions in some draws; ``cyclic``: the cycle 0 <-> 1 among maybe
    states, a dense block): `solve_until_many` == `solve_until_batch` bit for bit, == numpy's linear solve."""
    rng = np.random.default_rng(4)
    blocks = 0
    for _ in range(20):
        chain = random_chain(rng, int(rng.integers(3, 30)), cyclic=cyclic)
        draws = np.repeat(chain.data[None], 6, axis=0) * rng.random((6, chain.n_transitions))
        rows = np.repeat(np.arange(chain.n_states), np.diff(chain.indptr))
        draws[(rng.random(draws.shape) < 0.2) & (rows >= 2)] = 0.0  # zero-probability transitions, not in the cycle
        draws[:, chain.indptr[:-1]] += 0.01  # every state keeps a successor
        sums = np.stack([np.bincount(rows, weights=d, minlength=chain.n_states) for d in draws])
        draws = np.divide(draws, sums[:, rows], out=np.zeros_like(draws), where=sums[:, rows] > 0)
        levels = component_levels(chain.indptr, chain.indices)
        masks, expect = [], []
        for hold, goal in ((np.ones(chain.n_states, dtype=bool), chain.labels["a"]),
                           (chain.labels["b"], chain.labels["a"])):
            st = until_structure(chain.indptr, chain.indices, hold, goal)
            masks.append((goal, st.maybe))
            expect.append(solve_until_batch(chain.indptr, chain.indices, draws, hold, goal, st))
        if not solvable(levels, masks):
            continue
        got = solve_until_many(chain.indptr, chain.indices, draws, masks, levels)
        blocks += any(lv.blocks and masks[0][1][lv.blocks[0][0]] for lv in levels)
        for k in range(2):
            assert np.array_equal(got[k], expect[k])
        hold, goal = chain.labels["b"], chain.labels["a"]
        for d in range(draws.shape[0]):
            c = type(chain)(chain.indptr, chain.indices, draws[d], chain.labels, chain.initial_states)
            np.testing.assert_allclose(got[1][d], absorption(c, hold, goal), atol=1e-12)
    assert (blocks >= 5) == cyclic  # the dense path ran


def test_levels_of_an_absorbing_only_chain_and_of_a_cycle():
    only = random_chain(np.random.default_rng(0), 4, absorbing_only=True)
    (level,) = component_levels(only.indptr, only.indices)
    assert level.singles.tolist() == [0, 1, 2, 3] and level.blocks == ()
    cyclic = random_chain(np.random.default_rng(0), 8, cyclic=True)
    levels = component_levels(cyclic.indptr, cyclic.indices)
    assert [b.tolist() for lv in levels for b in lv.blocks] == [[0, 1]] and len(levels[-1].blocks) == 1
    half = np.zeros(8, dtype=bool)
    half[0] = True  # a maybe-set holding half of the block 0 <-> 1: formula by formula
    assert not solvable(levels, [(np.zeros(8, dtype=bool), half)])


def test_summaries_of_many_equal_one_by_one():
    rng = np.random.default_rng(9)
    parts = [rng.random((300, int(rng.integers(1, 6)))) for _ in range(6)]
    for one, many in zip(parts, summarise_many(parts, 0.9), strict=True):
        alone = summarise(one, 0.9)
        for f in ("lower", "upper", "mean", "mc_error"):
            assert np.array_equal(getattr(alone, f), getattr(many, f)), f


def test_episode_rows_at_once_equal_each_initial_state_alone():
    """`EpisodeChains.row` computes every initial state's mean and interval in one call: the same numbers as one
    column at a time (numpy sums a column alone pairwise; the rows' sums are taken the same way)."""
    from perception_safety.evaluation.intervals import clopper_pearson
    from perception_safety.verification.per_episode import EpisodeChains

    rng = np.random.default_rng(0)
    for _ in range(100):
        e, m = int(rng.integers(1, 300)), int(rng.integers(1, 6))
        v = rng.random((e, m)) * 1.2 - 0.1  # some values outside [0, 1]: clipped
        chains = EpisodeChains({"s": v}, np.ones(e, dtype=bool))
        for i in range(m):
            x = np.clip(v[:, i], 0.0, 1.0)
            lo, hi = clopper_pearson(float(x.sum()), x.size, 0.05)
            assert chains.row("s", i) == {"episode_mean": float(x.mean()), "episode_lower": float(lo),
                                          "episode_upper": float(hi), "episode_chains": e}


def test_episodes_and_draws_in_one_solve_equal_two_solves():
    from perception_safety.verification.builder import build_chain
    from perception_safety.verification.car_model import car_system, counted_observations
    from perception_safety.verification.interval_chain import decision_bins
    from perception_safety.verification.per_episode import episode_chains, episodes_and_draws
    from perception_safety.verification.posterior import chain_skeleton, posterior_values

    dc, eps = _split_reference(12)
    cfg = VerificationConfig(max_speeds=[3])
    counted = counted_observations(dc, "class_by_distance", cfg.true_envs["ped"], episodes=eps)
    _, system = car_system(dc, cfg, "class_by_distance", "ped", 3)
    obs = counted.model()
    build_chain(system, obs)
    sk, bins = chain_skeleton(system, obs), decision_bins(system, obs)
    draws = counted.sample(np.random.default_rng(1), 50)
    specs = resolve_specs(cfg.specs)
    per_ep, drawn = episodes_and_draws(system, counted, sk, specs, bins, 0.05, "w", [], draws)
    alone = episode_chains(system, counted, chain_skeleton(system, obs), specs, bins, 0.05, "w", [])
    separately = posterior_values(chain_skeleton(system, obs), draws, specs)
    for name in specs:
        assert np.array_equal(per_ep.values[name], alone.values[name])
        assert np.array_equal(drawn[name], separately[name])
