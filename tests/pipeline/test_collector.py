"""The collector around the map and the reduce (`pipeline.collector`): paused while they run, their survivors frozen
until the run ends, cycles of one input freed on the way."""

import gc
import weakref

import pytest

from perception_safety.pipeline.collector import collector_paused, frozen_for_run


def test_the_collector_is_paused_only_while_the_map_runs_here():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed map")
    assert gc.isenabled()
    with collector_paused(False):
        assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a collector the caller had off stays off
    finally:
        gc.enable()


def test_tidy_frees_the_cycles_of_one_input_while_the_collector_is_paused():
    class Node:
        pass

    with collector_paused() as tidy:
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        alive = weakref.ref(a)
        del a, b
        assert alive() is not None
        tidy()
        assert alive() is None
        assert not gc.isenabled()


def test_the_survivors_are_frozen_and_handed_back_at_the_end_of_the_run():
    assert gc.get_freeze_count() == 0
    with frozen_for_run():
        with collector_paused():
            kept = [[i] for i in range(1000)]  # containers the map built and the run keeps
        assert gc.get_freeze_count() >= len(kept)  # out of the collector's reach: no full pass walks them
        assert kept[999] == [999]
    assert gc.get_freeze_count() == 0
    assert any(o is kept for o in gc.get_objects(generation=2))  # back with the collector


def test_a_freeze_made_before_the_run_is_left_as_it_was():
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with frozen_for_run(), collector_paused():
            pass
        assert gc.get_freeze_count() >= before
    finally:
        gc.unfreeze()


def test_frozen_acyclic_objects_are_still_freed_by_reference_counting():
    class Leaf:
        pass

    with frozen_for_run():
        with collector_paused():
            leaf = Leaf()
        alive = weakref.ref(leaf)
        del leaf
        assert alive() is None


def test_nothing_is_frozen_outside_a_run():
    with collector_paused():
        kept = [[i] for i in range(10)]
    assert gc.get_freeze_count() == 0 and kept[9] == [9]


@pytest.mark.parametrize("fails", [False, True])
def test_an_evaluate_run_freezes_what_the_map_built_and_hands_it_back_at_its_end(recorded_bags, tmp_path,
                                                                                 monkeypatch, fails):
    """`run_evaluate`: during the analyses the map's and the reduce's survivors are frozen; after the run (also a
    failed one) nothing is."""
    import io

    from rich.console import Console

    from perception_safety.pipeline import run as run_module
    from perception_safety.pipeline.evaluate_config import load_evaluate_config

    frozen: list[int] = []
    reduce = run_module.reduce_partials

    def reduce_and_look(*args, **kwargs):
        out = reduce(*args, **kwargs)
        frozen.append(gc.get_freeze_count())
        if fails:
            raise RuntimeError("an analysis failed")
        return out

    monkeypatch.setattr(run_module, "reduce_partials", reduce_and_look)
    root, _, config = recorded_bags
    cfg, text = load_evaluate_config(config)
    if fails:
        with pytest.raises(RuntimeError, match="an analysis failed"):
            run_module.run_evaluate([root], cfg, text, tmp_path / "out", 1, Console(file=io.StringIO()))
    else:
        run_module.run_evaluate([root], cfg, text, tmp_path / "out", 1, Console(file=io.StringIO()))
    assert frozen and frozen[0] > 1000  # the partials, the reduced sums: out of the collector's full passes
    assert gc.get_freeze_count() == 0
