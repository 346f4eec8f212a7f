"""DRN and PRISM explicit exports read back by Storm give the same probabilities."""

from __future__ import annotations

import numpy as np
import stormpy

from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.export import export_drn, export_prism_explicit
from perception_safety.verification.observations import prop_observations
from perception_safety.verification.specs import BUILTIN_SPECS, check

LABELS = ["ped", "obs", "ped,obs", "empty"]
M = np.array([[0.6, 0.0, 0.2, 0.0], [0.0, 0.9, 0.3, 0.0], [0.1, 0.0, 0.4, 0.0], [0.3, 0.1, 0.1, 1.0]])


def small_chain():
    g = Geometry.reference(3)
    return g, build_chain(car_pedestrian_system(g, {"ped": True}, [1, 2, 3]), prop_observations(M, LABELS, "ped"))


def test_drn_round_trip(tmp_path):
    _, chain = small_chain()
    path = export_drn(chain, tmp_path / "chain.drn")
    model = stormpy.build_model_from_drn(str(path))
    assert model.nr_states == chain.n_states and model.nr_transitions == chain.n_transitions
    prop = stormpy.parse_properties(BUILTIN_SPECS["stop_at_k"])[0]
    values = stormpy.model_checking(model, prop).get_value_vector()
    np.testing.assert_allclose(values, check(chain, BUILTIN_SPECS["stop_at_k"]), atol=1e-12)


def test_prism_explicit_files_parse_back(tmp_path):
    """PRISM's explicit format (no PRISM here): parse .tra/.lab by hand and compare with the chain."""
    g, chain = small_chain()
    files = export_prism_explicit(chain, tmp_path / "chain")
    tra = files["tra"].read_text().splitlines()
    assert tra[0] == f"{chain.n_states} {chain.n_transitions}"
    triples = np.array([line.split() for line in tra[1:]], dtype=float)
    dense = np.zeros((chain.n_states, chain.n_states))
    dense[triples[:, 0].astype(int), triples[:, 1].astype(int)] = triples[:, 2]
    np.testing.assert_array_equal(dense, chain.to_scipy().toarray())
    np.testing.assert_allclose(dense.sum(axis=1), 1.0, atol=1e-12)

    lab = files["lab"].read_text().splitlines()
    names = dict(item.split("=") for item in lab[0].split())
    assert names["0"] == '"init"'
    by_name = {v.strip('"'): int(k) for k, v in names.items()}
    members: dict[int, set[int]] = {i: set() for i in by_name.values()}
    for line in lab[1:]:
        state, ids = line.split(":")
        for i in ids.split():
            members[int(i)].add(int(state))
    assert members[by_name["init"]] == {g.index(1, v) for v in (1, 2, 3)}
    assert members[by_name["stop_at_k"]] == {g.index(g.stop_cell, 0)}
    assert members[by_name["ped"]] == set(range(chain.n_states))
    assert files["sta"].read_text().splitlines()[1] == '0:("(x=1, v=0)")'
