"""QoS profiles of the nodes: sensor-data (best effort, keep last) for inputs, reliable for outputs."""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)


def input_qos(depth: int = 5, reliable: bool = False) -> QoSProfile:
    """Sensor-data profile (best effort, volatile, keep last ``depth``); ``reliable`` for bag replay without loss."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def output_qos(depth: int = 10) -> QoSProfile:
    """Reliable, volatile, keep last ``depth``: what loggers, planners and /diagnostics consumers expect."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )
