"""`PendingCounts`: the confusion parts of one episode counted together when it flushes equal each part counted
on its own (`confusion_part` without ``pending``, the reference): every key, array and per-episode count."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perception_safety.evaluation.confusion.rows import MatchedRows
from perception_safety.pipeline.breakdowns import PendingCounts, confusion_part
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from tests.evaluation.confusion.test_rows import CONFIGS, bands, episode_batch


def assert_same_part(got, want, where="") -> None:
    assert list(got) == list(want), where  # same keys in the same order (results.json is written from them)
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same_part(got[key], value, f"{where}/{key}")
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[key], value, err_msg=f"{where}/{key}")
        else:
            assert got[key] == value, f"{where}/{key}"


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("one_episode", [True, False])
def test_flushed_parts_equal_the_parts_counted_alone(name, one_episode):
    cfg = EvaluateConfig(confusion=CONFIGS[name])
    batch = episode_batch(11, 120)
    if one_episode:
        batch = replace(batch, frame_episodes=np.full(batch.n_frames, "bag", dtype=object))
    rng = np.random.default_rng(5)
    masks = [None, rng.random(batch.n_frames) < 0.3, np.zeros(batch.n_frames, bool), np.arange(batch.n_frames) < 60]
    by_band = MatchedRows.of(batch, cfg.confusion, bands(batch, [4.0, 8.0, 12.0]))
    pending = PendingCounts(cfg, "src")
    parts = [confusion_part(batch, cfg, "src", m, pending=pending) for m in masks]
    parts += [confusion_part(batch, cfg, "src", rows=by_band.select_band(k), pending=pending) for k in (0, 2)]
    assert all(p == {} for p in parts)  # filled when the episode flushes
    pending.flush()
    want = [confusion_part(batch, cfg, "src", m) for m in masks]
    want += [confusion_part(batch, cfg, "src", rows=by_band.select_band(k)) for k in (0, 2)]
    for k, (got, ref) in enumerate(zip(parts, want, strict=True)):
        assert_same_part(got, ref, f"part {k}")
    assert ("clusters" in parts[0]) == (name != "track_window" and one_episode)  # frames without one: none
