"""Stamp pairing of image and detection streams."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.ros.sync import StampPairer


def test_exact_pairs_equal_stamps_in_either_arrival_order():
    p: StampPairer[str, str] = StampPairer()
    assert p.add_first(10, "img10") is None
    assert p.add_second(10, "det10") == (10, "img10", "det10")
    assert p.add_second(20, "det20") is None
    assert p.add_first(20, "img20") == (20, "img20", "det20")
    assert p.pending() == (0, 0)
    assert p.stats.pairs == 2


def test_exact_mode_never_pairs_different_stamps():
    p: StampPairer[str, str] = StampPairer(slop_ns=0)
    p.add_first(10, "a")
    assert p.add_second(11, "b") is None
    assert p.pending() == (1, 1)


def test_approximate_takes_the_nearest_within_slop_and_drops_older():
    p: StampPairer[str, str] = StampPairer(slop_ns=5)
    p.add_first(100, "i100")
    p.add_first(110, "i110")
    p.add_first(120, "i120")
    # 112 is nearest to 110 (gap 2); 100 is older than the pair and can never pair any more
    assert p.add_second(112, "d112") == (110, "i110", "d112")
    assert p.stats.dropped_first == 1
    assert p.pending() == (1, 0)
    assert p.add_second(200, "d200") is None  # nothing within 5 ns


def test_queue_size_bounds_waiting_messages():
    p: StampPairer[int, int] = StampPairer(queue_size=3)
    for s in range(10):
        p.add_first(s, s)
    assert p.pending() == (3, 0)
    assert p.stats.dropped_first == 7
    assert p.add_second(9, 9) == (9, 9, 9)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=30, unique=True), st.randoms(use_true_random=False))
def test_streams_with_the_same_stamps_pair_completely_in_any_interleaving(stamps, rnd):
    """Both streams carry the same stamps in order; any interleaving pairs every stamp exactly once."""
    stamps = sorted(stamps)
    events = [("a", s) for s in stamps] + [("b", s) for s in stamps]
    # a random interleaving that keeps each stream's own order
    a, b = [e for e in events if e[0] == "a"], [e for e in events if e[0] == "b"]
    merged = []
    while a or b:
        src = a if (a and (not b or rnd.random() < 0.5)) else b
        merged.append(src.pop(0))
    p: StampPairer[int, int] = StampPairer(queue_size=len(stamps) + 1)
    pairs = []
    for kind, s in merged:
        r = p.add_first(s, s) if kind == "a" else p.add_second(s, s)
        if r is not None:
            pairs.append(r)
    assert sorted(x[0] for x in pairs) == stamps
    assert all(x[1] == x[2] == x[0] for x in pairs)


def test_second_message_with_a_waiting_stamp_is_merged_not_dropped():
    seen = []

    def merge(stamp, waiting, new):
        seen.append(stamp)
        return waiting + new

    p: StampPairer[str, str] = StampPairer(merge=merge)
    assert p.add_second(10, "far") is None
    assert p.add_second(10, "+near") is None
    assert p.add_first(10, "img") == (10, "img", "far+near")
    assert seen == [10] and p.stats.merged_second == 1 and p.stats.dropped_second == 0
