"""Label matching: exact names and globs, with a bounded per-label cache."""

from __future__ import annotations

from perception_safety.core.labels import MAX_CACHED_LABELS, LabelMatcher


def test_matcher_cache_is_bounded_and_answers_stay_right():
    m = LabelMatcher(["person", "human.pedestrian.*"])
    for i in range(3 * MAX_CACHED_LABELS):  # a stream of ever new labels (hostile input)
        assert not m(f"junk-{i}")
        assert len(m._cache) <= MAX_CACHED_LABELS
    assert m("person") and m("human.pedestrian.adult") and not m("car")
