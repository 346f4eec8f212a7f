"""`StepAssembler` of the returns logger: a frame judged twice (conflicting detections) is one step, stop if either."""

from __future__ import annotations

from perception_safety.ros.returns_logger_node import StepAssembler, _Pending


def test_two_results_for_one_stamp_are_one_step_with_the_cautious_stop():
    asm = StepAssembler(slop_ns=0, max_wait_s=0.0, running_speed=0.5)
    assert asm.add(_Pending(10, 0.0, False, False, (), {}))
    assert asm.add(_Pending(10, 0.0, True, True, ("stop_region: person",), {}))
    steps = asm.ready(now=1.0, flush=True)
    assert len(steps) == 1
    (_, step) = steps[0]
    assert step.stop and step.alarm and step.reasons == ("stop_region: person",)
    assert not asm.add(_Pending(10, 2.0, True, True, (), {})) and asm.late == 1  # already written: counted
