"""The chain handed to Storm as a binary UMB archive equals the chain built through stormpy's list builder."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest
import stormpy

from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.observations import class_observations
from perception_safety.verification.storm_umb import bit_set, storm_dtmc, write_umb


def _list_built(chain, bounds=None):
    """The reference hand-over: stormpy's SparseMatrixBuilder and BitVector fed Python lists (``bounds``: the
    ``[lower, upper]`` of each transition, an interval DTMC)."""
    n = chain.n_states
    kind = float if bounds is None else stormpy.Interval
    values = chain.data.tolist() if bounds is None else [stormpy.Interval(a, b) for a, b in bounds.tolist()]
    builder = stormpy.datastructures.SparseMatrixBuilder[kind](n, n, chain.n_transitions, True, False, 0)
    builder.add_next_values(chain.rows().tolist(), chain.indices.tolist(), values)
    labeling = stormpy.models.StateLabeling(n)
    labeling.add_label("init")
    labeling.set_states("init", stormpy.datastructures.BitVector(n, chain.initial_states.tolist()))
    for name, mask in chain.labels.items():
        labeling.add_label(name)
        labeling.set_states(name, stormpy.datastructures.BitVector(n, np.flatnonzero(mask).tolist()))
    comps = stormpy.models.SparseModelComponents[kind](transition_matrix=builder.build(), state_labeling=labeling)
    return stormpy.models.SparseDtmc[kind](comps)


def _chain(speed: int = 3):
    g = Geometry.reference(speed)
    n_bins = int(g.road_cells // 10) + 2
    p = np.zeros((n_bins, 3, 3))
    recall = np.linspace(0.95, 0.3, n_bins)
    p[:, 0, 0], p[:, 2, 0] = recall, 1 - recall
    p[:, 1, 1], p[:, 2, 1] = 0.6, 0.4
    p[:, 2, 2] = 1.0
    edges = [(10.0 * i, 10.0 * (i + 1)) for i in range(n_bins)]
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, speed + 1))
    return build_chain(system, class_observations(p, ["ped", "obs", "empty"], ["ped"], edges))


def _entries(model) -> list[tuple[int, int, float]]:
    return [(r, e.column, e.value) for r in range(model.nr_states) for e in model.transition_matrix.get_row(r)]


def test_label_names_that_are_not_storm_identifiers_are_refused(tmp_path):
    chain = _chain(2)
    with pytest.raises(ValueError, match=r"label '\.\./x'"):
        write_umb(tmp_path / "c.umb", chain.indptr, chain.indices, chain.data, chain.initial_states,
                  {"../x": np.zeros(chain.n_states, dtype=bool)})


def test_bit_set_is_little_endian_words():
    mask = np.zeros(130, dtype=bool)
    mask[[0, 3, 64, 129]] = True
    words = bit_set(mask).view("<u8")
    assert words.tolist() == [1 + 8, 1, 2]


def test_umb_model_equals_the_list_built_model_and_checks_the_same():
    chain = _chain()
    ours = storm_dtmc(chain.indptr, chain.indices, chain.data, chain.initial_states, chain.labels, via="archive")
    ref = _list_built(chain)
    assert (ours.nr_states, ours.nr_transitions) == (ref.nr_states, ref.nr_transitions) == (
        chain.n_states, chain.n_transitions)
    assert _entries(ours) == _entries(ref)
    assert set(ours.labeling.get_labels()) == set(ref.labeling.get_labels()) == {"init", *chain.labels}
    for name in ref.labeling.get_labels():
        assert list(ours.labeling.get_states(name)) == list(ref.labeling.get_states(name)), name
    assert list(ours.initial_states) == list(ref.initial_states)
    for formula in ('P=? [F "stop_at_k"]', 'P=? [!"past_k" U "stopped"]'):
        prop = stormpy.parse_properties(formula)[0]
        a = stormpy.model_checking(ours, prop).get_value_vector()
        b = stormpy.model_checking(ref, prop).get_value_vector()
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def _bounds(chain):
    return np.column_stack([0.9 * chain.data, np.minimum(1.0, 1.1 * chain.data)])


def test_interval_model_equals_the_list_built_interval_model():
    chain = _chain()
    bounds = _bounds(chain)
    ours = storm_dtmc(chain.indptr, chain.indices, bounds, chain.initial_states, chain.labels, via="archive")
    ref = _list_built(chain, bounds)
    assert type(ours) is type(ref) and ours.nr_transitions == ref.nr_transitions == chain.n_transitions

    def entries(model):
        return [(r, e.column, e.value.lower(), e.value.upper()) for r in range(model.nr_states)
                for e in model.transition_matrix.get_row(r)]

    assert entries(ours) == entries(ref)
    for name in ref.labeling.get_labels():
        assert list(ours.labeling.get_states(name)) == list(ref.labeling.get_states(name)), name


@pytest.mark.parametrize("interval", [False, True])
def test_archive_holds_the_arrays_storm_itself_exports(tmp_path, interval):
    # Storm's own exporter on the list-built model is the independent writer of the format
    chain = _chain(2)
    data = _bounds(chain) if interval else chain.data
    options = stormpy.io.UmbExportOptions()
    options.compression = stormpy.io.CompressionMode.NO_COMPRESSION
    ref = _list_built(chain, data if interval else None)
    stormpy.io.export_to_umb(ref, str(tmp_path / "storm.umb"), options=options)
    write_umb(tmp_path / "ours.umb", chain.indptr, chain.indices, data, chain.initial_states, chain.labels)

    def members(path):
        with tarfile.open(path) as tar:
            files = [m for m in tar.getmembers() if m.isfile() and m.name != "index.json"]
            return {m.name: tar.extractfile(m).read() for m in files}

    storm, ours = members(tmp_path / "storm.umb"), members(tmp_path / "ours.umb")
    assert set(storm) == set(ours)
    for name, payload in storm.items():
        assert ours[name] == payload, name


@pytest.mark.parametrize("interval", [False, True])
def test_small_chains_go_through_lists_and_give_the_archive_model(monkeypatch, interval):
    """Up to LIST_TRANSITIONS transitions `storm_dtmc` uses stormpy's list builder (no archive written); the model
    and what Storm computes on it are the archive's, bit for bit (point and interval DTMC)."""
    from perception_safety.verification import storm_umb

    chain = _chain()
    data = _bounds(chain) if interval else chain.data
    written = []
    real_write = storm_umb.write_umb
    monkeypatch.setattr(storm_umb, "write_umb", lambda *a: written.append(1) or real_write(*a))
    args = (chain.indptr, chain.indices, data, chain.initial_states, chain.labels)
    small = storm_dtmc(*args)
    assert chain.n_transitions <= storm_umb.LIST_TRANSITIONS and written == []
    archived = storm_dtmc(*args, via="archive")
    assert written == [1]
    monkeypatch.setattr(storm_umb, "LIST_TRANSITIONS", chain.n_transitions - 1)
    storm_dtmc(*args)
    assert written == [1, 1]  # above the threshold: the archive again

    def entries(model):
        return [(r, e.column, *((e.value.lower(), e.value.upper()) if interval else (e.value,)))
                for r in range(model.nr_states) for e in model.transition_matrix.get_row(r)]

    assert type(small) is type(archived) and entries(small) == entries(archived)
    for name in archived.labeling.get_labels():
        assert list(small.labeling.get_states(name)) == list(archived.labeling.get_states(name)), name
    prop = stormpy.parse_properties('P=? [F "stop_at_k"]')[0]
    if interval:
        mode = stormpy.UncertaintyResolutionMode.MAXIMIZE
        a = stormpy.model_checking(small, prop, uncertainty_resolution_mode=mode).get_value_vector()
        b = stormpy.model_checking(archived, prop, uncertainty_resolution_mode=mode).get_value_vector()
    else:
        a = stormpy.model_checking(small, prop).get_value_vector()
        b = stormpy.model_checking(archived, prop).get_value_vector()
    assert list(a) == list(b)
    with pytest.raises(ValueError, match="via"):
        storm_dtmc(*args, via="pipe")
