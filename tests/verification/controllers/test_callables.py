"""Controllers given as ``module:function``: loading, and clear errors for wrong shapes and ranges."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from perception_safety.verification.car_pedestrian import Geometry
from perception_safety.verification.controllers import braking_rule, resolve_controller, state_controller
from perception_safety.verification.errors import VerificationError

G = Geometry.reference(2)


@pytest.fixture
def module():
    mod = types.ModuleType("ctl_test_module")
    mod.same = braking_rule
    mod.wrong_shape = lambda x, v, kind, g: (x[:1], v[:1])
    mod.too_fast = lambda x, v, kind, g: (np.minimum(x + v, g.road_cells), v + 1)
    mod.fractional = lambda x, v, kind, g: (x + 0.5, v)
    mod.single = lambda x, v, kind, g: x
    mod.raises = lambda x, v, kind, g: 1 / 0
    mod.two_args = lambda x, v: (x, v)
    mod.alarm_aware = lambda x, v, kind, g, alarm=False: (x, np.zeros_like(v) if alarm else v)
    mod.not_callable = 3
    sys.modules["ctl_test_module"] = mod
    yield mod
    del sys.modules["ctl_test_module"]


def run(name, observation=("ped",)):
    k = state_controller(resolve_controller({"python": f"ctl_test_module:{name}"}), G)
    return k(np.arange(G.n_states), observation)


def test_callable_equal_to_builtin(module):
    ref = state_controller(resolve_controller("braking_rule"), G)
    s = np.arange(G.n_states)
    for obs in (("ped",), ("obs",), ()):
        assert np.array_equal(run("same", obs), ref(s, obs))


@pytest.mark.parametrize(("name", "message"), [
    ("wrong_shape", r"returned x' of shape \(1,\) for kind 'ped'; expected \(21,\)"),
    ("too_fast", r"maps \(x=1, v=2\) under kind 'ped' to \(x'=3, v'=3\), outside cells 1\.\.7 / speeds 0\.\.2"),
    ("fractional", r"returned non-integer x' \(float64\)"),
    ("single", r"must return a pair \(x', v'\)"),
    ("raises", r"failed on kind 'ped': ZeroDivisionError"),
])
def test_bad_callables_are_clear_errors(module, name, message):
    with pytest.raises(VerificationError, match=f"controller python ctl_test_module:{name}:? .*{message}"):
        run(name)


@pytest.mark.parametrize(("spec", "message"), [
    ("ctl_test_module:two_args", r"takes 2 positional parameter\(s\); expected \(x, v, kind, geometry\)"),
    ("ctl_test_module:missing", r"has no attribute 'missing'"),
    ("ctl_test_module:not_callable", r"'not_callable' is not callable"),
    ("no_such_module_xyz:f", r"cannot import module 'no_such_module_xyz'"),
    ("nocolon", r"expected 'module:function'"),
])
def test_bad_specs(module, spec, message):
    with pytest.raises(VerificationError, match=message):
        resolve_controller({"python": spec})


def test_alarm_aware_callable_decides_on_alarm(module):
    r = resolve_controller({"python": "ctl_test_module:alarm_aware"})
    assert r.handles_alarm
    k = state_controller(r, G)
    s = np.array([G.index(2, 2)])
    assert G.describe(int(k(s, ("empty", "!alarm"))[0])) == "(x=2, v=0)"
    assert G.describe(int(k(s, ("empty",))[0])) == "(x=2, v=2)"
