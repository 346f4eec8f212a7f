"""The local executor: outcomes in input order, a raising task reported, a killed worker's task retried."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from perception_safety.executors import ExecutorConfig, run_tasks
from perception_safety.executors.local import run_local

sys.path.insert(0, str(Path(__file__).parent))  # spawned workers import the task module by name
from executor_test_tasks import alive, die_on_zero, hang_once, square_or_fail, wait_for_pid


def test_outcomes_in_input_order_a_raising_task_is_data_for_one_and_two_jobs():
    for jobs in (1, 2):
        seen = []
        outs = run_tasks(square_or_fail, [(x,) for x in range(5)], ExecutorConfig(jobs=jobs), seen.append)
        assert [o.index for o in outs] == [0, 1, 2, 3, 4]
        assert [o.value for o in outs] == [0, 1, None, 9, 16]
        assert outs[2].error == "input 2 is bad" and not outs[2].ok
        assert sorted(o.index for o in seen) == [0, 1, 2, 3, 4]  # progress: one call per finished task


def test_worker_killed_mid_task_is_retried_and_nothing_is_lost(tmp_path):
    marker = tmp_path / "pid"
    killed: list[int] = []

    def kill_first_attempt() -> None:
        pid = wait_for_pid(marker)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_first_attempt)
    killer.start()
    outs = run_local(hang_once, [(str(marker), x) for x in range(4)], jobs=2, max_retries=2)
    killer.join()
    assert killed and not alive(killed[0])
    assert [o.value for o in outs] == [0, 1, 4, 9] and all(o.ok for o in outs)
    assert outs[1].attempts == 1  # rerun alone in a fresh worker, the first (killed) run not held against it


def test_a_task_that_always_kills_its_worker_fails_after_its_retries_others_finish():
    outs = run_local(die_on_zero, [(x,) for x in range(3)], jobs=2, max_retries=1)
    assert outs[0].error == "worker process died (2 attempts)" and outs[0].attempts == 2
    assert [o.value for o in outs[1:]] == [101, 102]
