"""Small recorded bags for the pipeline tests, built in code."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames

SMALL_CONFIG = """
evaluate:
  analyses: [confusion, pcd, verification, bbsl, returns]
  pcd_targets:
    - {name: pedestrian, class_id: pedestrian}
confusion:
  classes: {ped: [pedestrian], obs: [car]}
bbsl:
  image_size: [1280, 720]
  target_classes: [pedestrian]
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
            cy = 420 + 200 * rng.uniform()  # near the warning region's top edge (y = 468)
            box = Box(cx - h / 3, cy - h / 2, cx + h / 3, cy + h / 2)
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
    base = tmp_path_factory.mktemp("evaluated")
    log = base / "episodes.jsonl"
    write_episode_log(log)
    out = base / "out"
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(out), "--episodes", str(log)]) == 0
    return out, json.loads((out / "results.json").read_text()), log


def write_episode_log(path) -> None:
    """Three aligned rollouts of two scenarios: one collision avoided by the monitor, one false alarm."""
    from perception_safety.io.episode_log import EpisodeLogWriter, EpisodeStep

    def steps(stop_at, collide_at, alarm_at=None, n=6):
        out = []
        for t in range(n):
            running = stop_at is None or t < stop_at
            out.append(
                EpisodeStep(
                    t,
                    running,
                    collision=(t == collide_at),
                    stop=not running,
                    alarm=alarm_at is not None and t >= alarm_at,
                    frame=scene_frames(1, t)[0],
                )
            )
        return out

    with EpisodeLogWriter(path) as w:
        w.write_episode("s1", "perception", steps(None, 4, alarm_at=2), {"horizon": 6})
        w.write_episode("s1", "monitored", steps(3, None, alarm_at=2), {"horizon": 6})
        w.write_episode("s1", "ground_truth", steps(3, None), {"horizon": 6})
        w.write_episode("s2", "perception", steps(None, None, alarm_at=1), {"horizon": 6})
        w.write_episode("s2", "monitored", steps(2, None, alarm_at=1), {"horizon": 6})
        w.write_episode("s2", "ground_truth", steps(None, None), {"horizon": 6})
