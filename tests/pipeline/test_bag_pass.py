"""The shared per-input pass: one read, episodes with the caller's conditions, workers sized from the input."""

from __future__ import annotations

from perception_safety.io.bag import write_frames
from perception_safety.pipeline.bag_pass import MapInput, ReadOptions, run_pass, workers_for

from .conftest import scene_frames


def test_workers_from_input_size():
    small = [MapInput(f"b{i}", messages=700) for i in range(7)]  # the demo: ~0.1 s of map per bag
    assert workers_for(small, 2) == 1
    big = [MapInput(f"b{i}", messages=100_000) for i in range(8)]  # 20 s of map per bag
    assert workers_for(big, 2) == 2 and workers_for(big, 64) == 8 and workers_for(big, 1) == 1
    assert workers_for([MapInput("x", messages=10**9)], 4) == 1  # never more workers than inputs


def test_partial_per_episode_with_the_callers_conditions(tmp_path):
    bag = tmp_path / "bag"
    write_frames(bag, scene_frames(12, 3), custom_data={"perception_safety.episode": "from-metadata"})
    inp = MapInput(str(bag), "bag", {"episode": "ep-7", "weather": "rain"}, 48)
    seen = []

    def per_episode(ep):
        seen.append((ep.episode, len(ep.frames), ep.verdicts, ep.verdicts_missing))
        return {"n_gt": sum(len(f.ground_truth) for f in ep.frames)}

    part = run_pass(inp, ReadOptions(statuses="stop_region"), per_episode, (1280, 720))
    # the conditions given by the caller are used (metadata.yaml is not parsed again by the pass)
    assert part["frames"] == 12 and [e["episode"] for e in part["episodes"]] == ["ep-7"]
    assert part["episodes"][0]["conditions"] == {"episode": "ep-7", "weather": "rain"}
    assert part["episodes"][0]["n_gt"] == 18 and part["episodes"][0]["frames"] == 12
    assert seen[0][2] is None and "not in the bag" in seen[0][3]  # no monitor topic: said, not silent
    assert part["box_extent"][3] > 0
