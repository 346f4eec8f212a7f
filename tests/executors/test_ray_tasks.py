"""The Ray executor on a real local Ray instance (session fixture): results as data, a killed worker's task retried,
a failing task reported, an interrupt cancels the cluster's tasks, an impossible memory request refused."""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from perception_safety.executors import ExecutorConfig, ExecutorError, run_tasks

sys.path.insert(0, str(Path(__file__).parent))
import executor_test_tasks as tasks

RAY = ExecutorConfig(kind="ray", max_retries=2, memory_mb=64)


@pytest.fixture(autouse=True)
def _ray(ray_cluster):
    tasks.ray_by_value()


def test_same_outcomes_as_local_and_a_raising_task_is_reported():
    seen = []
    outs = run_tasks(tasks.square_or_fail, [(x,) for x in range(5)], RAY, seen.append)
    local = run_tasks(tasks.square_or_fail, [(x,) for x in range(5)], ExecutorConfig())
    assert outs == local
    assert outs[2].error == "input 2 is bad"
    assert sorted(o.index for o in seen) == [0, 1, 2, 3, 4]


def test_worker_killed_mid_task_is_retried_by_ray_and_nothing_is_lost(tmp_path):
    marker = tmp_path / "pid"
    killed: list[int] = []

    def kill_first_attempt() -> None:
        pid = tasks.wait_for_pid(marker)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_first_attempt)
    killer.start()
    outs = run_tasks(tasks.hang_once, [(str(marker), x) for x in range(4)], RAY)
    killer.join()
    assert killed and not tasks.alive(killed[0])
    assert [o.value for o in outs] == [0, 1, 4, 9] and all(o.ok for o in outs)


def test_a_task_whose_worker_always_dies_is_reported_after_its_retries():
    outs = run_tasks(tasks.die_on_zero, [(x,) for x in range(3)], RAY.model_copy(update={"max_retries": 1}))
    assert not outs[0].ok and "after 1 retries" in outs[0].error and outs[0].attempts == 2
    assert [o.value for o in outs[1:]] == [101, 102]


def test_interrupt_cancels_the_clusters_tasks(tmp_path):
    """Ctrl-C (KeyboardInterrupt in the driver) while two tasks run: both worker processes are stopped."""
    pids: list[int] = []

    def interrupt_when_running() -> None:
        pids.extend(tasks.wait_for_pid(tmp_path / f"{x}.pid") for x in range(2))
        _thread.interrupt_main()

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_tasks(tasks.hang, [(str(tmp_path), x) for x in range(2)], RAY)
    assert len(pids) == 2 and tasks.gone_within(pids, 20.0), "cancelled tasks' workers still running"


def test_memory_request_larger_than_every_node_is_refused():
    with pytest.raises(ExecutorError, match=r"executor\.memory_mb"):
        run_tasks(tasks.square_or_fail, [(1,)], RAY.model_copy(update={"memory_mb": 10**9}))
