"""The monitor in the loop: f / f+m / f* chains from joint counts n(o, alarm), checked against a hand-built
2-cell example (closed forms) and against an independent numpy solve of the same chains."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.confusion.by_verdict import VerdictSplit
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.config import TrueEnvConfig, VerificationConfig
from perception_safety.verification.controllers.base import ALARM_TAG
from perception_safety.verification.monitor_loop import joint_observations
from perception_safety.verification.system_metrics import system_metrics

CLASSES = ("ped", "obs", "empty")
PROPS = ("ped", "obs", "ped,obs", "empty")
PED, EMPTY = 0, 3  # proposition columns


def confusion(edges, prop_cm, class_cm=None) -> DistanceConfusion:
    k = len(edges)
    prop_cm = np.asarray(prop_cm)
    class_cm = np.zeros((k, 3, 3), dtype=np.int64) if class_cm is None else np.asarray(class_cm)
    return DistanceConfusion(tuple(edges), CLASSES, PROPS, class_cm, prop_cm, class_cm.sum(axis=0),
                             prop_cm.sum(axis=0))


def two_cell_split() -> VerdictSplit:
    """Bins [0, 1.5) and [1.5, 10) m; the decision that matters is taken in cell 1, 2 m before the crosswalk."""
    n0 = np.zeros((2, 4, 4), dtype=np.int64)
    n1 = np.zeros((2, 4, 4), dtype=np.int64)
    n0[1, PED, PED], n0[1, EMPTY, PED] = 5, 3      # pedestrian there: seen 5, missed 3 without alarm ...
    n1[1, PED, PED], n1[1, EMPTY, PED] = 1, 2      # ... seen 1, missed 2 with an alarm: 11 samples
    n0[0, PED, PED], n1[0, PED, PED] = 4, 1
    n0[1, EMPTY, EMPTY], n0[1, PED, EMPTY] = 6, 1  # no pedestrian: false detection 1 (no alarm) ...
    n1[1, EMPTY, EMPTY], n1[1, PED, EMPTY] = 2, 1  # ... 1 (alarm), 2 false alarms on correct frames: 10
    n0[0, EMPTY, EMPTY] = 5
    edges = [(0.0, 1.5), (1.5, 10.0)]
    return VerdictSplit(confusion(edges, n0), confusion(edges, n1), 37)


def two_cell_config(**monitor) -> VerificationConfig:
    return VerificationConfig.model_validate({
        "max_speeds": [1], "initial_speeds": [1],
        "geometry": {"road_cells": 3, "stop_cell": 2, "crosswalk_offset": 1},
        "true_envs": {"ped": {"class": ["ped"], "prop": "ped"}, "empty": {"class": ["empty"], "prop": "empty"}},
        "monitor_loop": {"variants": ["prop_by_distance"], "mission_loss_envs": ["empty"], **monitor},
    })


def test_two_cell_example_by_hand():
    """Road 1-2-3, k = 2, crosswalk 3, V = 1, start (1, 1). In cell 1 (2 m) a pedestrian observation or an
    alarm brakes to (2, 0) (stopped at k); anything else moves to (2, 1), which must pass k. Hence
    P_f(hazard) = P(no ped seen) = 5/11, P_f+m(hazard) = P(no ped, no alarm) = 3/11, P_f* = 0, and without a
    pedestrian P_f(loss) = P(ped seen) = 2/10, P_f+m(loss) = P(ped seen or alarm) = 4/10."""
    doc = system_metrics(two_cell_split(), two_cell_config())
    assert not doc["skipped"]
    assert "pedestrian is present at the crosswalk at every step" in doc["assumptions"][0]
    assert "brake: speed - 1 per step" in doc["assumptions"][2]
    (haz,) = [r for r in doc["results"] if r["measure"] == "hazard"]
    (loss,) = [r for r in doc["results"] if r["measure"] == "mission_loss"]
    assert haz["P_f"] == pytest.approx(5 / 11, abs=1e-12)
    assert haz["P_fm"] == pytest.approx(3 / 11, abs=1e-12)
    assert haz["P_fstar"] == pytest.approx(0.0, abs=1e-12)
    assert haz["SG_sys"] == pytest.approx(2 / 11, abs=1e-12) and haz["RH_sys"] == pytest.approx(3 / 11, abs=1e-12)
    assert loss["P_f"] == pytest.approx(2 / 10, abs=1e-12) and loss["P_fm"] == pytest.approx(4 / 10, abs=1e-12)
    assert loss["AC_sys"] == pytest.approx(2 / 10, abs=1e-12)
    counts = {(c["true_env"], c["bin"][0]): (c["n_no_alarm"], c["n_alarm"]) for c in doc["verdict_counts"]}
    assert counts[("ped", 1.5)] == (8, 3) and counts[("empty", 1.5)] == (7, 3)
    # the empty environment's near bin has no alarm sample: flagged, not silent
    assert [w["code"] for w in doc["warnings"]] == ["zero_sample_verdict"]
    assert "env empty, bin [0, 1.5) m: the alarm verdict column has 0 of 5 samples" in doc["warnings"][0]["message"]


def test_joint_model_outcomes_and_probabilities():
    model = joint_observations(two_cell_split(), "prop_by_distance", TrueEnvConfig(class_objects=["ped"], prop="ped"))
    assert model.outcomes[:4] == (("ped",), ("obs",), ("ped", "obs"), ())
    assert model.outcomes[4:] == (("ped", ALARM_TAG), ("obs", ALARM_TAG), ("ped", "obs", ALARM_TAG), (ALARM_TAG,))
    np.testing.assert_allclose(model.probs[1], np.array([5, 0, 0, 3, 1, 0, 0, 2]) / 11, atol=1e-15)
    np.testing.assert_allclose(model.probs.sum(axis=1), 1.0, atol=1e-15)


def test_class_joint_with_two_objects_is_alarm_times_conditionals():
    """μ(y1, y2, a | ped, obs) = P(a | ped) P(y1 | ped, a) P(y2 | obs, a), one pooled matrix."""
    n0 = np.zeros((1, 3, 3), dtype=np.int64)
    n1 = np.zeros((1, 3, 3), dtype=np.int64)
    n0[0, 0, 0], n0[0, 2, 0], n0[0, 1, 1], n0[0, 2, 1] = 6, 2, 3, 1   # ped: 6 seen / 2 missed; obs 3 / 1
    n1[0, 0, 0], n1[0, 2, 0], n1[0, 1, 1], n1[0, 2, 1] = 1, 3, 1, 1   # with an alarm
    prop = np.zeros((1, 4, 4), dtype=np.int64)
    split = VerdictSplit(confusion([(0.0, 50.0)], prop, n0), confusion([(0.0, 50.0)], prop, n1), 10)
    m = joint_observations(split, "class_by_distance", TrueEnvConfig(class_objects=["ped", "obs"], prop="ped,obs"))
    p = dict(zip(m.outcomes, m.probs[0], strict=True))
    assert p[("ped", "obs")] == pytest.approx(8 / 12 * 6 / 8 * 3 / 4, abs=1e-15)
    assert p[("empty", "empty", ALARM_TAG)] == pytest.approx(4 / 12 * 3 / 4 * 1 / 2, abs=1e-15)
    assert sum(p.values()) == pytest.approx(1.0, abs=1e-14)


# ------------------------------------------------------------------ independent numpy solve


def _braking_rule(x, v, ped, N, k):
    if x == k and v == 0:
        return x, v
    if ped:
        if v > 0 and x <= k:
            return min(x + v, N), (v if x + v <= k - v * (v + 1) // 2 else v - 1)
        return x, v
    return min(x + v, N), v


def _reach(P: np.ndarray, target: np.ndarray) -> np.ndarray:
    """P(F target) by a graph search and a dense linear solve (no Storm)."""
    n = len(P)
    can = target.copy()
    while True:
        new = can | (P[:, can].sum(axis=1) > 0)
        if (new == can).all():
            break
        can = new
    unknown = can & ~target
    x = np.zeros(n)
    x[target] = 1.0
    idx = np.flatnonzero(unknown)
    A = np.eye(len(idx)) - P[np.ix_(idx, idx)]
    b = P[np.ix_(idx, np.flatnonzero(target))].sum(axis=1)
    x[idx] = np.linalg.solve(A, b)
    return x


@pytest.mark.parametrize("fail_safe", ["brake", "stop_now"])
def test_against_independent_numpy_solve(fail_safe):
    rng = np.random.default_rng(7)
    edges = [(0.0, 2.0), (2.0, 4.0), (4.0, 7.0), (7.0, 100.0)]
    n0 = rng.integers(0, 20, size=(4, 4, 4))
    n1 = rng.integers(0, 8, size=(4, 4, 4))
    split = VerdictSplit(confusion(edges, n0), confusion(edges, n1), 1)
    V = 3
    cfg = VerificationConfig.model_validate({
        "max_speeds": [V], "true_envs": {"ped": {"class": ["ped"], "prop": "ped"}},
        "monitor_loop": {"variants": ["prop_by_distance"], "mission_loss_envs": ["ped"], "fail_safe": fail_safe},
    })
    doc = system_metrics(split, cfg)
    N, k, c = V * (V + 1) // 2 + 4, V * (V + 1) // 2 + 1, V * (V + 1) // 2 + 2
    states = [(x, v) for x in range(1, N + 1) for v in range(V + 1)]
    index = {s: i for i, s in enumerate(states)}
    col = n0[:, :, PED] + n1[:, :, PED]  # [bin, pred]
    chains = {key: np.zeros((len(states), len(states))) for key in ("f", "fm", "fstar")}
    for (x, v), i in index.items():
        d = abs(c - x)
        b = next(j for j, (lo, hi) in enumerate(edges) if lo <= d < hi)
        total = col[b].sum()
        for pred in range(4):
            ped = PROPS[pred] in ("ped", "ped,obs")
            chains["f"][i, index[_braking_rule(x, v, ped, N, k)]] += col[b, pred] / total
            chains["fm"][i, index[_braking_rule(x, v, ped, N, k)]] += n0[b, pred, PED] / total
            alarm_next = (min(x + v, N), max(v - 1, 0) if fail_safe == "brake" else 0)
            chains["fm"][i, index[alarm_next]] += n1[b, pred, PED] / total
        chains["fstar"][i, index[_braking_rule(x, v, True, N, k)]] = 1.0
    past_k = np.array([x > k for x, _ in states])
    loss = np.array([v == 0 and x != N for x, v in states])
    for r in doc["results"]:
        i = index[(1, r["initial_speed"])]
        target = past_k if r["measure"] == "hazard" else loss
        for key in ("f", "fm", "fstar"):
            assert r[f"P_{key}"] == pytest.approx(_reach(chains[key], target)[i], abs=1e-9), (r, key)
    assert len(doc["results"]) == 2 * V


def test_two_cell_bounds_from_independent_clopper_pearson():
    """The f+m hazard interval of the 2-cell example from scipy's Beta quantiles: the only uncertain step is
    (1, 1) -> (2, 1) (hazard for sure) vs (2, 0) (safe); its mass lies in [max(lo_21, 1 - hi_20),
    min(hi_21, 1 - lo_20)] with per-cell Clopper-Pearson intervals at alpha/2 / 8 / 2 (8 cells of the joint column,
    2 bins with a state whose successor depends on the observation: (1, 1) at 2 m and (2, 1) at 1 m)."""
    from scipy.stats import beta

    doc = system_metrics(two_cell_split(), two_cell_config())
    (haz,) = [r for r in doc["results"] if r["measure"] == "hazard"]
    a = 0.05 / 2 / 8 / 2

    def cp(k, n=11):
        return (beta.ppf(a / 2, k, n - k + 1) if k else 0.0), (beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0)

    to_21 = [cp(0), cp(3)]                               # no alarm, kind obs / empty
    to_20 = [cp(5), cp(0), cp(1), cp(0), cp(0), cp(2)]   # ped, ped+obs without alarm; every alarm outcome
    lo21, hi21 = sum(c[0] for c in to_21), min(1.0, sum(c[1] for c in to_21))
    lo20, hi20 = sum(c[0] for c in to_20), min(1.0, sum(c[1] for c in to_20))
    assert haz["P_fm_lower"] == pytest.approx(max(lo21, 1 - hi20), abs=1e-9)
    assert haz["P_fm_upper"] == pytest.approx(min(hi21, 1 - lo20), abs=1e-9)
    assert haz["SG_sys_lower"] == pytest.approx(haz["P_f_lower"] - haz["P_fm_upper"], abs=1e-12)
    assert haz["SG_sys_upper"] == pytest.approx(haz["P_f_upper"] - haz["P_fm_lower"], abs=1e-12)
    assert haz["P_f_lower"] <= haz["P_f"] <= haz["P_f_upper"]
    assert haz["RH_sys_lower"] <= haz["RH_sys"] <= haz["RH_sys_upper"]
    (loss,) = [r for r in doc["results"] if r["measure"] == "mission_loss"]
    assert loss["AC_sys_lower"] <= loss["AC_sys"] <= loss["AC_sys_upper"]


def test_class_two_objects_bounds_contain_point():
    n0 = np.zeros((1, 3, 3), dtype=np.int64)
    n1 = np.zeros((1, 3, 3), dtype=np.int64)
    n0[0, 0, 0], n0[0, 2, 0], n0[0, 1, 1], n0[0, 2, 1] = 6, 2, 3, 1
    n1[0, 0, 0], n1[0, 2, 0], n1[0, 1, 1], n1[0, 2, 1] = 1, 3, 1, 1
    prop = np.zeros((1, 4, 4), dtype=np.int64)
    split = VerdictSplit(confusion([(0.0, 50.0)], prop, n0), confusion([(0.0, 50.0)], prop, n1), 10)
    m = joint_observations(split, "class_by_distance", TrueEnvConfig(class_objects=["ped", "obs"], prop="ped,obs"),
                           alpha=0.05)
    assert m.has_intervals and np.all(m.lower <= m.probs + 1e-15) and np.all(m.probs <= m.upper + 1e-15)
