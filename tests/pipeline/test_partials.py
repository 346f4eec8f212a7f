"""A partial's JSON text (`pipeline.partials`): packed record lists restore exactly, older partials are read, other
formats and damaged packs are refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.pipeline.bag_pass import MapInput
from perception_safety.pipeline.breakdowns import counts_json
from perception_safety.pipeline.evaluate import analyse_input, reduce_partials
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.pipeline.partials import (
    PartialError,
    pack_records,
    partial_text,
    read_partial,
    unpack_records,
)


def test_records_round_trip_with_their_key_order_and_values():
    records = [
        {"stamp_ns": 5, "kind": "missed", "box": [1.5, 2.0, 3.0, 4.25], "distance_m": None, "bag": "/b/x", "t": 0.1},
        {"stamp_ns": 7, "kind": "missed", "box": None, "distance_m": 3.0, "bag": "/b/x", "t": 1e-300},
        {"kind": "missed", "stamp_ns": 9, "bag": "/b/x", "extra": [1, {"a": "b"}]},  # another key set and order
        {"stamp_ns": 11, "kind": "matched", "box": [0, 0, 1, 1], "distance_m": -0.0, "bag": "/b/x", "t": 2.5},
    ]
    packed = pack_records([dict(r) for r in records], ("kind", "bag", "box"))
    assert packed["common"] == {"bag": "/b/x"}  # 'kind' differs once: not common; only strings are shared
    back = unpack_records(json.loads(json.dumps(packed)))
    assert back == records and [list(r) for r in back] == [list(r) for r in records]
    assert json.dumps(back) == json.dumps(records)
    assert unpack_records(pack_records([])) == []
    one = [{"a": "x", "b": 1}]
    assert pack_records(one, ("a",))["common"] == {"a": "x"} and unpack_records(pack_records(one, ("a",))) == one
    assert pack_records(one)["common"] == {} and unpack_records(pack_records(one)) == one


@pytest.fixture(scope="module")
def partial(recorded_bags):
    """A real partial of the map (evidence references and BBSL test cases included)."""
    root, _, config = recorded_bags
    cfg, _ = load_evaluate_config(config)
    cfg = cfg.model_copy(update={"evaluate": cfg.evaluate.model_copy(update={
        "evidence_per_cell": 5, "breakdowns": ["ego_speed_band", "object_size_band", "weather"],
        "analyses": [*cfg.evaluate.analyses, "detection_ap"]})})
    return analyse_input(MapInput(str(root / "run0"), "bag", {"weather": "rain"}), cfg), cfg


def test_a_partial_reads_back_exactly_and_smaller(partial):
    doc, cfg = partial
    before = json.dumps(doc, default=np.ndarray.tolist)  # the map keeps count arrays as arrays
    refs = [r for ep in doc["episodes"] for c in ep["evidence"]["cells"].values() for r in c["refs"]]
    cases = [tc for ep in doc["episodes"] for s in ep["bbsl"].values() for tc in s["test_cases"]]
    assert len(refs) > 20 and len(cases) > 20  # the lists that are packed are there
    text = partial_text(json.loads(before))
    back = read_partial(text, "p.json")
    counts = [a for a in _arrays(back) if isinstance(a, np.ndarray)]
    assert len(counts) > 30 and all(a.dtype == np.int64 for a in counts)  # counts and masks come back as arrays
    assert json.dumps(back, default=np.ndarray.tolist) == before  # same keys, same order, same values
    assert len(text) < 0.8 * len(before)
    old = json.loads(before)
    old["format"] = "perception_safety.partial/2"  # a partial written before packing: read as it is
    assert read_partial(json.dumps(old), "old.json") == old
    red_new, red_old = reduce_partials([back], cfg), reduce_partials([old], cfg)
    assert red_new.evidence == red_old.evidence and red_new.bbsl == red_old.bbsl
    assert len(red_new.detection_ap.tp) > 50 and red_new.detection_ap.to_json() == red_old.detection_ap.to_json()
    assert all(type(v) is int for row in red_new.detection_ap.tp for v in row)  # plain ints, as from JSON
    for a, b in ((red_new.confusion, red_old.confusion),
                 *((g.confusion(), red_old.breakdowns[attr][v].confusion())
                   for attr, groups in red_new.breakdowns.items() for v, g in groups.items())):
        assert json.dumps(counts_json(a), default=np.ndarray.tolist) == json.dumps(counts_json(b),
                                                                                   default=np.ndarray.tolist)


def _arrays(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _arrays(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _arrays(v)
    else:
        yield obj


@pytest.mark.parametrize(("text", "message"), [
    ("[1]", "p.json: not a partial this version reads (a JSON list"),
    ('{"format": "perception_safety.partial/1"}',
     "p.json: not a partial this version reads (format 'perception_safety.partial/1'"),
    ("{not json", "p.json: unreadable partial"),
    ('{"format": "perception_safety.partial/3", "episodes": [{"bbsl": {"s": {"test_cases": '
     '{"keys": [["a", "b"]], "common": {}, "rows": [[0, 1]]}}}}]}', "p.json: damaged partial: a packed list"),
    ('{"format": "perception_safety.partial/3", "episodes": [{"bbsl": {"s": {"test_cases": '
     '{"keys": [], "common": {}, "rows": [[0]]}}}}]}', "p.json: damaged partial: a packed list"),
    ('{"format": "perception_safety.partial/3", "episodes": [{"confusion": {"class_cm": '
     '{"shape": [2, 2], "counts": [1, 2, 3]}}}]}', "p.json: damaged partial: a packed list"),
])
def test_other_formats_and_damaged_packs_are_named(text, message):
    with pytest.raises(PartialError, match="^" + message.replace("(", r"\(")):
        read_partial(text, "p.json")


def test_partial_text_leaves_the_partial_as_built(partial):
    doc, _ = partial
    before = json.dumps(doc, default=np.ndarray.tolist)
    partial_text(doc)
    assert json.dumps(doc, default=np.ndarray.tolist) == before


def test_counts_json_holds_what_cluster_counts_write():
    """`counts_json` writes the per-episode counts itself (arrays, no nested lists): the keys and values of
    `ClusterCounts.to_json`, so `confusion_from_mapping` reads back the same confusion."""
    from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
    from perception_safety.evaluation.confusion.config import ConfusionConfig
    from perception_safety.evaluation.confusion.io import confusion_from_mapping

    from .conftest import scene_frames

    frames = [f.__class__(f.stamp_ns, f.detections, f.ground_truth, f.ego, episode=f"e{i % 3}")
              for i, f in enumerate(scene_frames(60, 3))]
    dc = confusion_from_frames(frames, ConfusionConfig(classes={"ped": ["pedestrian"], "obs": ["car"]}))
    assert dc.clusters is not None and len(dc.clusters) == 3
    got = counts_json(dc)["clusters"]
    want = dc.clusters.to_json()
    assert list(got) == list(want) and json.dumps(got, default=np.ndarray.tolist) == json.dumps(want)
    back = confusion_from_mapping(json.loads(json.dumps(counts_json(dc), default=np.ndarray.tolist)))
    assert counts_json(back)["clusters"]["ids"] == want["ids"] and (back.class_cm == dc.class_cm).all()


def _plain(obj):
    """A reduce's result as comparable plain data (dataclasses, arrays, tuples, dict keys as text)."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def test_the_map_in_this_process_reduces_like_the_map_in_workers(recorded_bags, tmp_path):
    """In this process the reduce reads each partial as built (no JSON round trip); in worker processes it reads
    their text: the same reduce, field by field."""
    from perception_safety.executors import ExecutorConfig
    from perception_safety.pipeline.evaluate import map_bags

    root, _, config = recorded_bags
    cfg, _ = load_evaluate_config(config)
    cfg = cfg.model_copy(update={"evaluate": cfg.evaluate.model_copy(update={
        "breakdowns": ["ego_speed_band", "object_size_band"], "analyses": [*cfg.evaluate.analyses, "detection_ap"]})})
    bags = [root / "run0", root / "run1"]
    import gc

    young: list[int] = []  # objects the collector tracks in its youngest generation when a bag is done
    here = map_bags(bags, cfg, tmp_path / "a", ExecutorConfig(jobs=1),
                    on_done=lambda _: young.append(gc.get_count()[0]))
    assert len(young) == 2 and max(young) < 100, young  # collected after each bag: a bag's cycles die with it
    workers = map_bags(bags, cfg, tmp_path / "b", ExecutorConfig(jobs=2))
    assert [p.read_text() for p in sorted((tmp_path / "a").iterdir())] == \
        [p.read_text() for p in sorted((tmp_path / "b").iterdir())]
    a, b = (_plain(reduce_partials(m.partials, cfg)) for m in (here, workers))
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), [k for k in a if a[k] != b[k]]
