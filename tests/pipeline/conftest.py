"""Small recorded bags for the pipeline tests, built in code."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames

SMALL_CONFIG = """
evaluate:
  analyses: [confusion, pcd, verification]
  pcd_targets:
    - {name: pedestrian, class_id: pedestrian}
confusion:
  classes: {ped: [pedestrian], obs: [car]}
verification:
  max_speeds: [1, 2, 3]
  specs: [stop_at_k, phi1]
"""


def scene_frames(n: int, seed: int) -> list[Frame]:
    """A pedestrian (every other frame also a car) at 2..95 m; detection gets worse with distance."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        gts, dets = [], []
        for cls, lateral, track in (("pedestrian", 0.0, "p"), ("car", 4.0, "c"))[: 1 + (i % 2)]:
            d = float(rng.uniform(2, 95))
            h = 7000.0 / d
            cx = 640 + 30 * lateral
            box = Box(cx - h / 3, 360 - h / 2, cx + h / 3, 360 + h / 2)
            gts.append(GroundTruthObject.at_position(box, cls, (d, lateral, 0.0), track))
            if rng.uniform() < 1.05 - d / 100:
                j = rng.normal(0, 0.04 * h, 4)
                jb = Box(box.x_min + j[0], box.y_min + j[1], box.x_max + abs(j[2]), box.y_max + abs(j[3]))
                label = cls if rng.uniform() > 0.1 else ("car" if cls == "pedestrian" else "pedestrian")
                dets.append(Detection(jb, label, float(rng.uniform(0.4, 1.0))))
        if rng.uniform() < 0.1:
            dets.append(Detection(Box(10, 10, 50, 90), "pedestrian", 0.3))  # ghost
        frames.append(Frame(10**9 + i * 50_000_000, tuple(dets), tuple(gts), EgoState(speed=8.0)))
    return frames


@pytest.fixture(scope="module")
def recorded_bags(tmp_path_factory):
    """Three bags (mcap, sqlite3, mcap) in one directory, and the frames they hold, in bag order."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    root = tmp_path / "bags"
    parts = [scene_frames(120, s) for s in (1, 2, 3)]
    for k, (frames, storage) in enumerate(zip(parts, ("mcap", "sqlite3", "mcap"), strict=True)):
        write_frames(root / f"run{k}", frames, storage=storage)
    config = tmp_path / "evaluate.yaml"
    config.write_text(SMALL_CONFIG)
    return root, [f for p in parts for f in p], config


@pytest.fixture(scope="module")
def evaluated(recorded_bags, tmp_path_factory):
    """`perception-safety evaluate` run once on the recorded bags: (output dir, results.json content)."""
    import json

    from perception_safety.cli import main

    root, _, config = recorded_bags
    out = tmp_path_factory.mktemp("evaluated") / "out"
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text())
