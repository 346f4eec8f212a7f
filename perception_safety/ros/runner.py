"""Process entry point shared by the nodes: init, spin, clean exit on SIGINT/SIGTERM, config errors -> exit 2.

rclpy's own signal handler shuts the context down *while callbacks may still run*: a callback that publishes
at that moment raises ``RCLError: context is invalid`` out of ``spin`` (exit 1 in 2 of 6 SIGINTs under load,
issue 19 item 4). So the nodes install their own SIGINT/SIGTERM handlers that only set a flag; the executor is
spun in short slices until the flag is set, then nodes are destroyed and the context shut down, in that order.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from perception_safety.errors import PerceptionSafetyError

#: longest a signal waits for the executor to notice it (seconds; plus the duration of a running callback)
SPIN_SLICE_S = 0.1


class ShutdownFlag:
    """Set by SIGINT/SIGTERM (handlers installed by `install`); the previous handlers are restored by `restore`."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: Any) -> None:
        self.signal = signum
        self.event.set()

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def is_set(self) -> bool:
        return self.event.is_set()


def spin_until_shutdown(executor: Any, flag: ShutdownFlag, context: Any = None) -> None:
    """Spin ``executor`` in `SPIN_SLICE_S` slices until ``flag`` is set or the context is shut down."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    while not flag.is_set() and rclpy.ok(context=context):
        try:
            executor.spin_once(timeout_sec=SPIN_SLICE_S)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as exc:  # a callback's bug must not end the node: report it and keep spinning
            print(f"error: callback raised {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def run_nodes(factories: Sequence[Callable[[], Any]], args: Sequence[str] | None = None,
              executor_factory: Callable[[], Any] | None = None) -> int:
    """Build the nodes, spin them until SIGINT/SIGTERM; returns the process exit code.

    A `PerceptionSafetyError` while building a node (bad parameters, unparsable spec) is printed as
    ``error: ...`` and gives exit code 2; SIGINT/SIGTERM give 0, also while callbacks are busy.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from perception_safety.ros.transport import select_profile

    select_profile()  # before rclpy.init: Fast DDS reads the profile when the participant is created
    flag = ShutdownFlag()
    flag.install()
    try:
        rclpy.init(args=list(args) if args is not None else None, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # rcl rejects malformed --ros-args / params files here
        flag.restore()
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    nodes: list[Any] = []
    executor = None
    code = 0
    try:
        for factory in factories:
            if flag.is_set():
                break
            nodes.append(factory())
        executor = executor_factory() if executor_factory is not None else SingleThreadedExecutor()
        for node in nodes:
            executor.add_node(node)
        spin_until_shutdown(executor, flag)
    except PerceptionSafetyError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        for node in reversed(nodes):
            try:
                node.destroy_node()
            except Exception as exc:  # a node's own clean-up failing must not turn a stop into a crash
                print(f"warning: {node.get_name()}: clean-up failed: {exc}", file=sys.stderr, flush=True)
        rclpy.try_shutdown()
        flag.restore()
    return code


def run_node(factory: Callable[[], Any], args: Sequence[str] | None = None,
             executor_factory: Callable[[], Any] | None = None) -> int:
    """`run_nodes` for one node (the console scripts ``safety_monitor``, ``bbsl_monitor``, ...)."""
    return run_nodes([factory], args, executor_factory)


def make_executor(kind: str) -> tuple[Any, str]:
    """An rclpy executor of ``kind`` (``events`` or ``single_threaded``) and the kind actually made.

    ``events`` is rclpy's EventsExecutor (Kilted and later, `rclpy.experimental`): ready callbacks come from a C++
    event queue, where the SingleThreadedExecutor rebuilds its wait set from every subscription, timer, service
    and QoS-event waitable in Python at each wake-up (docs/performance.md, "ROS nodes"). Where rclpy has no
    EventsExecutor the SingleThreadedExecutor is made instead, and the kind returned says so.
    """
    from rclpy.executors import SingleThreadedExecutor

    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            return SingleThreadedExecutor(), "single_threaded (rclpy has no EventsExecutor)"
        return EventsExecutor(), "events"
    return SingleThreadedExecutor(), "single_threaded"


def publish_period_diagnostics(node: Any) -> None:
    """A node's diagnostics timer tick: publish ``/diagnostics`` and close the input-health period.

    A failure is logged, never raised: the timer (and so staleness reporting) must keep running.
    """
    try:
        node._publish_diagnostics()
        node.health.end_period()
    except Exception as exc:
        node.get_logger().error(f"diagnostics failed: {exc}", throttle_duration_sec=5.0)
