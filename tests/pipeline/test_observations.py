"""The map's observation sequences reuse the confusion counts' matching of the episode batch (`matched_rows`): the
same sequences as `observation_sequences` matching each episode's own frames again, one or several episodes."""

from __future__ import annotations

from dataclasses import replace

from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.pipeline.observations import observation_part, pedestrian_sets
from perception_safety.verification.sequences import observation_sequences
from tests.pipeline.conftest import scene_frames


def test_observation_part_equals_matching_each_episode_again():
    cfg = EvaluateConfig()
    ped, sets = cfg.verification.pedestrian_label, pedestrian_sets(cfg)
    frames = scene_frames(300, 5)
    for episodes in (["e1"] * 300, ["e1"] * 120 + ["e2"] * 100 + ["e1"] * 80):
        labelled = [replace(f, episode=e) for f, e in zip(frames, episodes, strict=True)]
        got = observation_part(FrameBatch.from_frames(labelled, ClassMapper(cfg.confusion)), cfg)
        assert list(got) == list(dict.fromkeys(episodes))
        for name, seqs in got.items():
            own = FrameBatch.from_frames([f for f in labelled if f.episode == name], ClassMapper(cfg.confusion))
            assert seqs == observation_sequences(own, cfg.confusion, ped, sets)
        assert any(n > 1 for runs in got["e1"]["class"].values() for _, _, n in runs)  # the runs are not trivial
