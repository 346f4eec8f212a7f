"""`FrameSortedKeys.search` equals ``np.searchsorted`` for queries within their frame: keys hit exactly (both
sides), crowded buckets (more keys than the step limit), frames without keys."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.confusion.frame_search import MAX_STEPS, FrameSortedKeys


@pytest.mark.parametrize("seed", range(4))
def test_search_equals_searchsorted(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_frames, stride = 50, 100.0
    per_frame = rng.poisson(6, n_frames)
    per_frame[::7] = 0  # frames without keys
    per_frame[3] = 5 * MAX_STEPS  # a crowd: all in one bucket
    frame = np.repeat(np.arange(n_frames), per_frame)
    local = rng.uniform(1.0, 99.0, len(frame))
    local[frame == 3] = 50.0 + rng.uniform(0.0, 0.01, per_frame[3])
    local = np.round(local, 1)  # repeated keys
    keys = np.sort(frame * stride + local)
    index = FrameSortedKeys.build(keys, frame, n_frames, stride)
    q_frame = rng.integers(0, n_frames, 4000)
    q = q_frame * stride + rng.uniform(0.5, 99.5, len(q_frame))
    q[:300] = keys[rng.integers(0, len(keys), 300)]  # exactly on a key
    q_frame[:300] = np.floor(q[:300] / stride).astype(np.int64)
    q[300:400] = 3 * stride + 50.005  # inside the crowd
    q_frame[300:400] = 3
    for side in ("left", "right"):
        assert index.search(q, q_frame, side).tolist() == np.searchsorted(keys, q, side=side).tolist()


def test_search_without_keys() -> None:
    index = FrameSortedKeys.build(np.zeros(0), np.zeros(0, dtype=np.int64), 3, 10.0)
    assert index.search(np.array([5.0, 25.0]), np.array([0, 2]), "right").tolist() == [0, 0]
