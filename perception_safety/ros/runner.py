"""Process entry point shared by the nodes: init, spin, clean exit on SIGINT/SIGTERM, config errors -> exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from perception_safety.errors import PerceptionSafetyError


def run_node(factory: Callable[[], Any], args: Sequence[str] | None = None) -> int:
    """Spin the node made by ``factory`` until shutdown; returns the process exit code.

    A `PerceptionSafetyError` while building the node (bad parameters, unparsable spec) is printed as
    ``error: ...`` and gives exit code 2; SIGINT/SIGTERM (Kilted: `ExternalShutdownException`) give 0.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException

    try:
        rclpy.init(args=list(args) if args is not None else None)
    except Exception as exc:  # rcl rejects malformed --ros-args / params files here
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    node = None
    try:
        node = factory()
        rclpy.spin(node)
    except PerceptionSafetyError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def publish_period_diagnostics(node: Any) -> None:
    """A node's diagnostics timer tick: publish ``/diagnostics`` and close the input-health period.

    A failure is logged, never raised: the timer (and so staleness reporting) must keep running.
    """
    try:
        node._publish_diagnostics()
        node.health.end_period()
    except Exception as exc:
        node.get_logger().error(f"diagnostics failed: {exc}", throttle_duration_sec=5.0)
