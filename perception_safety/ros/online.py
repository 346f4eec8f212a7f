"""All nodes in one process: ``perception-safety online --params config/online.yaml``.

The params file is a standard ROS 2 parameters file: one ``<node>: ros__parameters:`` section per node (the
same content as the per-node files the launch files pass), plus an ``online:`` section read here: which nodes
to start and the remap rules (``from:=to``, applied to every node, as the launch files apply the same rule to
each node that uses the topic). The nodes share a `MultiThreadedExecutor`; SIGINT/SIGTERM stop it (exit 0).
The nodes are built and spun by `perception_safety.ros.runner.run_nodes`, like the single-node executables.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perception_safety.io.config import ConfigError, format_validation_error, load_yaml

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
    doc = load_yaml(path)
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


def run_online(params_file: str | Path, only: Sequence[str] | None = None, record: str | Path | None = None,
               record_images: bool = False) -> int:
    """Start the configured nodes in one process and spin them until SIGINT/SIGTERM; the exit code
    (`ros.runner.run_nodes`: the nodes' own clean shutdown and DDS transport selection, config errors -> 2).
    With ``record``, everything the nodes publish is also written as a new MCAP bag there (`ros.recorder`)."""
    from rclpy.executors import MultiThreadedExecutor

    from perception_safety.ros.runner import run_nodes

    cfg = load_online_config(params_file)
    names = list(only) if only else list(cfg.nodes)
    unknown = [n for n in names if n not in NODE_MODULES]
    if unknown:
        raise ConfigError(f"--nodes: unknown node(s) {unknown} (known: {', '.join(NODE_MODULES)})")
    factories = [partial(importlib.import_module(NODE_MODULES[n]).make_node, n) for n in names]
    if record is not None:
        from perception_safety.ros.recorder import check_record_dir, make_recorder

        out = check_record_dir(record)
        made: list = []
        factories = [lambda f=f: made.append(f()) or made[-1] for f in factories]
        factories.append(lambda: make_recorder(made, out, record_images))
    print(f"online: starting {', '.join(names)} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    return run_nodes(factories, ["perception-safety-online", *ros_args(params_file, cfg)],
                     executor_factory=lambda: MultiThreadedExecutor(num_threads=cfg.threads or None))
