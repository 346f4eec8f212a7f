"""Slots (a pool of CARLA servers): one task per slot at a time, a dead slot's task re-run on another slot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perception_safety.executors import ExecutorConfig
from perception_safety.executors.slots import run_on_slots

sys.path.insert(0, str(Path(__file__).parent))
import executor_test_tasks as tasks

SERVERS = ["dead:2000", "a:2000", "b:2000"]


def _check(outs) -> None:
    assert [o.index for o in outs] == list(range(6))
    assert all(o.ok for o in outs[:5]), [o.error for o in outs]
    assert [o.value[1] for o in outs[:5]] == [0, 1, 2, 3, 4]
    assert {o.value[0] for o in outs[:5]} <= {"a:2000", "b:2000"}  # nothing finished on the dead server
    assert outs[0].attempts == 2  # the first task went to the dead server first, then to a live one
    assert outs[5].error == "ValueError: bad input 99" or outs[5].error.startswith("ValueError: bad input 99 (at ")


@pytest.mark.parametrize("kind", ["local", "ray"])
def test_dead_server_is_dropped_and_its_task_runs_elsewhere(kind, request, tmp_path):
    if kind == "ray":
        request.getfixturevalue("ray_cluster")
        tasks.ray_by_value()
    args = [(str(tmp_path), x) for x in (0, 1, 2, 3, 4, 99)]
    _check(run_on_slots(tasks.on_server, args, SERVERS, ExecutorConfig(kind=kind, memory_mb=64)))


def test_when_every_server_is_dead_the_tasks_left_fail_with_each_servers_reason(tmp_path):
    outs = run_on_slots(tasks.on_server, [(str(tmp_path), x) for x in range(3)], ["dead:1", "dead:2"],
                        ExecutorConfig())
    assert all(not o.ok for o in outs)
    assert all("dead:1: dead:1 does not answer" in o.error and "dead:2" in o.error for o in outs)
