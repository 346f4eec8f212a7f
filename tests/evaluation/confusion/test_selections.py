"""`count_selections`: many selections of one matched batch counted at once equal each counted on its own
(`ConfusionAccumulator.add_rows`, the reference) — frame selections, band selections, empty ones, one episode or
several, every matching and sample unit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator
from perception_safety.evaluation.confusion.rows import MatchedRows
from perception_safety.evaluation.confusion.selections import count_selections
from tests.evaluation.confusion.test_rows import CONFIGS, assert_same, bands, episode_batch


def selections(batch, cfg, seed: int) -> list[MatchedRows]:
    """What the evaluate map counts of one episode: all rows, frame masks (verdicts, speed bands, an empty one, a
    single frame) and every size band (rows matched within a band), in a shuffled order."""
    rng = np.random.default_rng(seed)
    rows = MatchedRows.of(batch, cfg)
    n = batch.n_frames
    masks = [rng.random(n) < q for q in (0.1, 0.5, 0.9)] + [np.zeros(n, bool), np.arange(n) == 3,
                                                             np.diff(batch.gt_offsets) == 0]  # fmt: skip
    by_band = MatchedRows.of(batch, cfg, bands(batch, [4.0, 8.0, 12.0]))
    out = [rows, *(rows.select_frames(m) for m in masks), *(by_band.select_band(k) for k in (-1, 0, 1, 2, 3))]
    return [out[i] for i in rng.permutation(len(out))]


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("one_episode", [True, False])
def test_every_selection_counts_what_it_counts_alone(name, seed, one_episode):
    cfg = CONFIGS[name]
    batch = episode_batch(seed, 150)
    if one_episode:  # the evaluate map's case (a bag is one episode): the batched path
        batch = replace(batch, frame_episodes=np.full(batch.n_frames, "bag-7", dtype=object))
    sels = selections(batch, cfg, seed)
    got = count_selections(sels, cfg)
    assert len(got) == len(sels)
    for acc, rows in zip(got, sels, strict=True):
        assert_same(acc, ConfusionAccumulator(cfg).add_rows(rows))


def test_one_episode_selections_take_the_batched_path(monkeypatch):
    """No selection falls back to `add_rows` when every frame is of one episode (the empty one adds nothing)."""
    cfg = CONFIGS["class_aware_camera"]
    batch = replace(episode_batch(3, 150), frame_episodes=np.full(150, "e", dtype=object))
    sels = selections(batch, cfg, 3)
    calls = []
    original = ConfusionAccumulator.add_rows
    monkeypatch.setattr(ConfusionAccumulator, "add_rows", lambda self, rows: calls.append(rows) or original(self, rows))
    count_selections(sels, cfg)
    assert sum(r.n_frames == 0 for r in sels) == 1
    assert calls == []


def test_rows_of_another_config_are_refused():
    batch = episode_batch(0, 20)
    rows = MatchedRows.of(batch, CONFIGS["iou"])
    with pytest.raises(ValueError, match="another confusion config"):
        count_selections([rows], CONFIGS["class_aware_camera"])
