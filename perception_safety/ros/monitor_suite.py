"""The safety monitor's monitors, fail-safe (no rclpy): `perception_safety.monitors.suite`, which
`perception-safety monitor` runs offline too, with the node's stop policy from its parameters."""

from __future__ import annotations

from perception_safety.monitors.base import MonitorResult
from perception_safety.monitors.suite import Guarded, MonitorSuite, RegionCheck
from perception_safety.monitors.suite import stop_requested as suite_stop_requested
from perception_safety.ros.safety_monitor_params import SafetyMonitorParams

__all__ = ["Guarded", "MonitorSuite", "RegionCheck", "stop_requested"]


def stop_requested(results: list[MonitorResult], params: SafetyMonitorParams, failed: set[str],
                   runtime_name: str, stop_name: str) -> bool:
    """`monitors.suite.stop_requested` with the node's ``fail_safe_stop`` and ``stop_on_monitor_alarm``."""
    return suite_stop_requested(results, failed, runtime_name, stop_name, params.fail_safe_stop,
                                params.stop_on_monitor_alarm)
