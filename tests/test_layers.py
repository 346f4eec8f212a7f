"""The layer rule of docs/architecture.md: science packages never load ROS, CARLA, rosbags or upper layers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCIENCE = ["core", "bbsl", "monitors", "evaluation", "verification"]
FORBIDDEN = [
    "rclpy",
    "carla",
    "rosbags",
    "ray",
    "perception_safety.io",
    "perception_safety.executors",
    "perception_safety.ros",
    "perception_safety.sim",
    "perception_safety.pipeline",
    "perception_safety.report",
    "perception_safety.commands",
]


@pytest.mark.parametrize("package", SCIENCE)
def test_science_package_imports_nothing_above_it(package):
    code = (
        "import importlib, json, pkgutil, sys\n"
        f"pkg = importlib.import_module('perception_safety.{package}')\n"
        "for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == [], f"perception_safety.{package} loads {bad}"
