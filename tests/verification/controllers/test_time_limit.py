"""Issue 25 item 9: a `python:` controller runs with a time limit per call (default 1 s); a timeout is an error."""

from __future__ import annotations

import sys
import time
import types

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.verification.car_pedestrian import Geometry
from perception_safety.verification.config import PythonChoice
from perception_safety.verification.controllers import braking_rule, resolve_controller, state_controller
from perception_safety.verification.errors import VerificationError

from ..conftest import REFERENCE

G = Geometry.reference(2)


def _sleeps(seconds: float):
    def controller(x, v, kind, geometry):
        time.sleep(seconds)
        return braking_rule(x, v, kind, geometry)

    return controller


@pytest.fixture
def module():
    mod = types.ModuleType("ctl_slow_module")
    mod.stuck = _sleeps(30.0)
    mod.slow = _sleeps(0.3)
    sys.modules["ctl_slow_module"] = mod
    yield mod
    del sys.modules["ctl_slow_module"]


def test_a_stuck_controller_is_an_error_after_the_default_one_second(module):
    assert PythonChoice(python="ctl_slow_module:stuck").time_limit_s == 1.0
    k = state_controller(resolve_controller({"python": "ctl_slow_module:stuck"}), G)
    t0 = time.monotonic()
    with pytest.raises(VerificationError, match=r"ctl_slow_module:stuck: no answer within its time limit of 1 s"
                                                r" \(kind 'ped'\); a timeout is an error, never a result"):
        k(np.arange(G.n_states), ("ped",))
    assert 0.9 < time.monotonic() - t0 < 5.0


def test_the_limit_is_configurable_and_a_call_within_it_gives_its_result(module):
    s = np.arange(G.n_states)
    ref = state_controller(resolve_controller("braking_rule"), G)(s, ("obs",))
    ok = state_controller(resolve_controller(PythonChoice(python="ctl_slow_module:slow", time_limit_s=5)), G)
    assert np.array_equal(ok(s, ("obs",)), ref)
    tight = state_controller(resolve_controller({"python": "ctl_slow_module:slow", "time_limit_s": 0.05}), G)
    with pytest.raises(VerificationError, match=r"time limit of 0\.05 s"):
        tight(s, ("obs",))


def test_verify_command_with_a_stuck_controller_exits_2(module, tmp_path, capsys):
    code = main(["verify", "--matrices", str(REFERENCE), "--max-speed", "1", "--out", str(tmp_path / "o"),
                 "--controller", "python:ctl_slow_module:stuck"])
    err = capsys.readouterr().err
    assert code == 2 and "no answer within its time limit of 1 s" in err and "Traceback" not in err
