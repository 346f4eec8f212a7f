"""Test-session environment: ROS 2 talks only on loopback, on a random domain, logging to a temp dir.

Set at import time, before any test imports rclpy; spawned processes inherit ``os.environ``.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randint(1, 101)))
os.environ["ROS_LOG_DIR"] = tempfile.mkdtemp(prefix="perception_safety_roslog_")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO_ROOT.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def shared_reference() -> Path:
    """The papers' reference data (../shared/reference beside the checkout)."""
    if not SHARED_REFERENCE.is_dir():
        pytest.fail(f"reference data not found at {SHARED_REFERENCE} (shared/ must sit beside the checkout)")
    return SHARED_REFERENCE
