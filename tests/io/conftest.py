"""Fixtures for the I/O tests: small random frames built in code."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, EgoState, Frame, GroundTruthObject


def _make_frames(n: int, seed: int = 0, image_shape=(24, 32, 3)) -> list[Frame]:
    """``n`` frames with random detections, ground truth (with positions and track ids), ego and image."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        dets = []
        for _ in range(rng.integers(0, 5)):
            x0, y0 = rng.uniform(0, 600, 2)
            w, h = rng.uniform(1, 80, 2)
            dets.append(Detection(Box(x0, y0, x0 + w, y0 + h), str(rng.choice(["car", "ped"])), float(rng.uniform())))
        gts = []
        for k in range(rng.integers(0, 4)):
            x0, y0 = rng.uniform(0, 600, 2)
            pos = tuple(float(v) for v in rng.uniform(-50, 50, 3))
            gts.append(GroundTruthObject.at_position(Box(x0, y0, x0 + 20, y0 + 40), "ped", pos, f"t{k}"))
        ego = EgoState(float(rng.uniform(-5, 5)), float(rng.uniform(-5, 5)), float(rng.uniform(-3, 3)), 8.0)
        image = rng.integers(0, 256, image_shape, dtype=np.uint8)
        frames.append(Frame(1_700_000_000_000_000_000 + i * 50_000_000, tuple(dets), tuple(gts), ego, image))
    return frames


@pytest.fixture
def make_frames():
    """Factory of random frames: ``make_frames(n, seed=0, image_shape=(24, 32, 3))``."""
    return _make_frames
