"""The built vision_msgs interfaces over real DDS: two processes on loopback, and the type hashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).parent / "scripts"
# Published by the vision_msgs 4.x interface definition (and reproduced by rosidl's build here).
DETECTION2DARRAY_RIHS01 = "RIHS01_214274120007f4a683866481336b70310268cfa107aebe9d594a6acf75bda968"


@pytest.mark.ros
def test_two_processes_exchange_detections_and_images():
    n = 15
    env = dict(os.environ)
    sub = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "dds_subscriber.py"), str(n)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pub = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "dds_publisher.py"), str(n)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = sub.communicate(timeout=90)
    pub.communicate(timeout=60)
    assert sub.returncode == 0 and pub.returncode == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    expected_dets = [[i, f"obj{i}", 100.0 + i, 50.5, 20.0, 40.0, "pedestrian", 0.25 + i / 100, 12.5] for i in range(n)]
    assert got["detections"] == expected_dets
    sums = [int((np.arange(72) * (i + 1) % 256).sum()) for i in range(n)]
    assert got["images"] == [[i, 4, 6, "rgb8", sums[i]] for i in range(n)]


def test_rosidl_and_rosbags_agree_on_the_type_hash():
    """rosbags (offline reads) and the rosidl build (live nodes) compute the published hash."""
    import json as _json
    import sys as _sys

    from perception_safety.io.typestore import ros2_typestore

    assert ros2_typestore().hash_rihs01("vision_msgs/msg/Detection2DArray") == DETECTION2DARRAY_RIHS01
    desc = Path(_sys.prefix) / "share" / "vision_msgs" / "msg" / "Detection2DArray.json"
    hashes = _json.loads(desc.read_text())["type_hashes"]
    built = {h["type_name"]: h["hash_string"] for h in hashes}
    assert built["vision_msgs/msg/Detection2DArray"] == DETECTION2DARRAY_RIHS01
    store = ros2_typestore()
    for name, value in built.items():
        assert store.hash_rihs01(name) == value, name
