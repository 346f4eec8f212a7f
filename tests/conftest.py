"""Test-session environment: ROS 2 talks only on loopback, on a random domain, logging to a temp dir.

Set at import time, before any test imports rclpy; spawned processes inherit ``os.environ``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

import pytest

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randint(1, 101)))
os.environ["ROS_LOG_DIR"] = tempfile.mkdtemp(prefix="perception_safety_roslog_")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray instances started here: loopback only

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO_ROOT / "reference"


@pytest.fixture(scope="session")
def shared_reference() -> Path:
    """The papers' reference data, kept in the repository (reference/README.md names the sources)."""
    if not SHARED_REFERENCE.is_dir():
        pytest.fail(f"reference data not found at {SHARED_REFERENCE} (reference/ in the repository)")
    return SHARED_REFERENCE


@pytest.fixture(scope="session")
def ray_cluster() -> str:
    """One real local Ray instance for the whole session: 2 CPUs, loopback only, no dashboard, its logs in a
    temp dir. Tests in this process use it through ``ray.is_initialized()``; subprocesses join it by the
    yielded GCS address (``--ray-address HOST:PORT``)."""
    import logging
    import shutil

    import ray

    temp = tempfile.mkdtemp(prefix="ps-ray-")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=temp,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    try:
        gcs = ray.get_runtime_context().gcs_address
        assert gcs.startswith("127.0.0.1:"), f"the test Ray instance must listen on loopback only, got {gcs}"
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield gcs
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def _test_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def kitti_scene():
    """tests/kitti_scene.py: a KITTI-like camera (1242x375) and pedestrians at known ground positions."""
    return _test_module("kitti_scene")


@pytest.fixture(scope="session")
def camera_scenes():
    """tests/camera_scenes.py: four real camera models (KITTI-like, 4:3, wide 1080p, the demo's) and pedestrians."""
    return _test_module("camera_scenes")
