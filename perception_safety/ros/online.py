"""All nodes in one process: ``perception-safety online --params config/online.yaml``.

The params file is a standard ROS 2 parameters file: one ``<node>: ros__parameters:`` section per node (the
same content as the per-node files the launch files pass), plus an ``online:`` section read here: which nodes
to start and the remap rules (``from:=to``, applied to every node, as the launch files apply the same rule to
each node that uses the topic). The nodes share a `MultiThreadedExecutor`; SIGINT/SIGTERM stop it (exit 0).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perception_safety.errors import PerceptionSafetyError
from perception_safety.io.config import ConfigError, format_validation_error

NodeName = Literal["safety_monitor", "bbsl_monitor", "returns_logger"]
#: node name -> module whose ``make_node(name)`` builds it
NODE_MODULES: dict[str, str] = {
    "safety_monitor": "perception_safety.ros.safety_monitor_node",
    "bbsl_monitor": "perception_safety.ros.bbsl_monitor_node",
    "returns_logger": "perception_safety.ros.returns_logger_node",
}
SECTION = "online"


class OnlineConfig(BaseModel):
    """The ``online: ros__parameters:`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: tuple[NodeName, ...] = Field(default=("safety_monitor", "bbsl_monitor", "returns_logger"), min_length=1)
    remaps: tuple[str, ...] = Field(default=(), description="'from:=to' topic remaps applied to every node")
    threads: int = Field(default=0, ge=0, le=64, description="executor threads; 0 = as many as CPUs")


def load_online_config(path: str | Path) -> OnlineConfig:
    """Validate the ``online`` section of a params file (errors name the file and the dotted key)."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected '<node>: ros__parameters:' sections")
    section = doc.get(SECTION, {}) or {}
    params = section.get("ros__parameters", {}) if isinstance(section, dict) else None
    if not isinstance(params, dict):
        raise ConfigError(f"{path}: {SECTION}: expected 'ros__parameters:' with nodes/remaps")
    try:
        cfg = OnlineConfig.model_validate(params)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, f"{SECTION}.ros__parameters")) from exc
    for i, rule in enumerate(cfg.remaps):
        src, sep, dst = rule.partition(":=")
        if not sep or not src or not dst:
            raise ConfigError(f"{path}: {SECTION}.ros__parameters.remaps[{i}]: expected 'from:=to', got {rule!r}")
    return cfg


def ros_args(params_file: str | Path, cfg: OnlineConfig) -> list[str]:
    """The rcl arguments: the params file (each node reads its section) and the remap rules."""
    args = ["--ros-args", "--params-file", str(params_file)]
    for rule in cfg.remaps:
        args += ["-r", rule]
    return args


def run_online(params_file: str | Path, only: Sequence[str] | None = None) -> int:
    """Start the configured nodes in one process and spin them until SIGINT/SIGTERM; the exit code."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

    cfg = load_online_config(params_file)
    names = list(only) if only else list(cfg.nodes)
    unknown = [n for n in names if n not in NODE_MODULES]
    if unknown:
        raise ConfigError(f"--nodes: unknown node(s) {unknown} (known: {', '.join(NODE_MODULES)})")
    try:  # the default context: the node factories use it (this is the process's only rclpy user)
        rclpy.init(args=["perception-safety-online", *ros_args(params_file, cfg)])
    except Exception as exc:  # rcl rejects malformed params files / remaps here
        raise ConfigError(f"{params_file}: {exc}") from exc
    nodes: list[Any] = []
    executor = MultiThreadedExecutor(num_threads=cfg.threads or None)
    try:
        for name in names:
            module = importlib.import_module(NODE_MODULES[name])
            nodes.append(module.make_node(name))
            executor.add_node(nodes[-1])
        print(f"online: {', '.join(names)} running (Ctrl-C to stop)", file=sys.stderr, flush=True)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PerceptionSafetyError:
        raise
    finally:
        executor.shutdown(timeout_sec=2.0)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0

