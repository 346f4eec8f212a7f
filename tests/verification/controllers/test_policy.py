"""Policy tables: a table equal to the built-in rule gives the identical chain; bad tables are clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.controllers import (
    braking_rule,
    load_policy,
    resolve_controller,
    state_controller,
    write_policy,
)
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import prop_observations

LABELS = ["ped", "obs", "ped,obs", "empty"]
# two bins, column-normalised P(pred | true) over 2^P (columns: true ped, obs, ped+obs, empty)
PROBS = np.array([
    [[0.6, 0.1, 0.3, 0.0], [0.1, 0.7, 0.2, 0.1], [0.2, 0.1, 0.4, 0.0], [0.1, 0.1, 0.1, 0.9]],
    [[0.3, 0.0, 0.2, 0.1], [0.2, 0.5, 0.3, 0.1], [0.1, 0.2, 0.2, 0.0], [0.4, 0.3, 0.3, 0.8]],
])
EDGES = [(0.0, 4.0), (4.0, 100.0)]


def chain_for(g: Geometry, controller, env: str = "ped"):
    system = car_pedestrian_system(g, {"ped": "ped" in env, "obs": "obs" in env}, range(1, g.max_speed + 1),
                                   controller=controller)
    return build_chain(system, prop_observations(PROBS, LABELS, env, EDGES))


@pytest.mark.parametrize("name", ["braking_rule", "paper_modes"])
@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_policy_table_equal_to_builtin_gives_identical_chain(tmp_path, name, suffix):
    geoms = [Geometry.reference(V) for V in (2, 4)]
    builtin = resolve_controller(name)
    path = write_policy(tmp_path / "p.csv", builtin.for_geometry(geoms[0]), geoms)
    if suffix == ".json":
        lines = path.read_text().splitlines()
        header = lines[0].split(",")
        rows = [dict(zip(header, [c if c in ("ped", "obs", "empty") else int(c) for c in ln.split(",")], strict=True))
                for ln in lines[1:]]
        path = tmp_path / "p.json"
        path.write_text(json.dumps({"rows": rows}))
    table = resolve_controller({"policy": str(path)})
    for g in geoms:
        for env in ("ped", "obs", "ped,obs", "empty"):
            a = chain_for(g, state_controller(builtin, g), env)
            b = chain_for(g, state_controller(table, g), env)
            for attr in ("indptr", "indices", "data", "initial_states"):
                assert np.array_equal(getattr(a, attr), getattr(b, attr)), (g.max_speed, env, attr)
    # the default system controller is the braking rule
    g = geoms[0]
    if name == "braking_rule":
        assert np.array_equal(chain_for(g, None).data, chain_for(g, state_controller(table, g)).data)


def _table(tmp_path, rows, header="x,v,kind,next_x,next_v"):
    p = tmp_path / "t.csv"
    p.write_text(header + "\n" + "\n".join(rows) + "\n")
    return p


def _full_rows(g: Geometry, skip=None, override=None):
    rows = []
    x, v = g.cell_speed(np.arange(g.n_states))
    for kind in ("ped", "obs", "empty"):
        nx, nv = braking_rule(x, v, kind, g)
        for i in range(len(x)):
            key = (int(x[i]), int(v[i]), kind)
            if key == skip:
                continue
            a, b = override[1] if override and override[0] == key else (int(nx[i]), int(nv[i]))
            rows.append(f"{key[0]},{key[1]},{kind},{a},{b}")
    return rows


def test_incomplete_table_names_file_and_missing_state(tmp_path):
    g = Geometry.reference(1)  # N = 5, V = 1
    p = _table(tmp_path, _full_rows(g, skip=(3, 1, "obs")))
    with pytest.raises(VerificationError, match=r"t\.csv: incomplete: no row for \(x=3, v=1, kind=obs\)"):
        state_controller(resolve_controller({"policy": str(p)}), g)


def test_out_of_range_successor_names_row_and_column(tmp_path):
    g = Geometry.reference(1)
    rows = _full_rows(g, override=((2, 1, "empty"), (9, 1)))
    p = _table(tmp_path, rows)
    line = 2 + rows.index("2,1,empty,9,1")
    with pytest.raises(VerificationError, match=rf"t\.csv: row {line}, column 'next_x': 9 is outside 1\.\.5"):
        state_controller(resolve_controller({"policy": str(p)}), g)


@pytest.mark.parametrize(("rows", "header", "message"), [
    (["1,0,ped,1"], "x,v,kind,next_x", r"missing column\(s\) \['next_v'\]"),
    (["1,0,ped,1,0,3"], "x,v,kind,next_x,next_v,speed", r"unknown column\(s\) \['speed'\]"),
    (["1,0,walker,1,0"], "x,v,kind,next_x,next_v", r"row 2, column 'kind': 'walker' is not one of"),
    (["1,0,ped,1,0", "1,0.5,ped,1,0"], "x,v,kind,next_x,next_v", r"row 3, column 'v': expected an integer"),
    (["1,0,ped,1,"], "x,v,kind,next_x,next_v", r"row 2, column 'next_v': empty cell"),
    (["1,0,ped,1,0,maybe"], "x,v,kind,next_x,next_v,alarm", r"row 2, column 'alarm': 'maybe' is not 0/1"),
])
def test_bad_cells_are_errors_naming_file_row_column(tmp_path, rows, header, message):
    with pytest.raises(VerificationError, match=r"t\.csv: " + message):
        load_policy(_table(tmp_path, rows, header))


def test_duplicate_rows_and_wrong_max_speed(tmp_path):
    g = Geometry.reference(1)
    rows = _full_rows(g)
    p = _table(tmp_path, [*rows, rows[0]])
    with pytest.raises(VerificationError, match=r"rows 2 and \d+ give the same \(x, v, kind\)"):
        state_controller(resolve_controller({"policy": str(p)}), g)
    p2 = _table(tmp_path, ["1," + r for r in rows], "max_speed,x,v,kind,next_x,next_v")
    with pytest.raises(VerificationError, match=r"no row for max_speed 2 \(the table covers V in \[1\]\)"):
        state_controller(resolve_controller({"policy": str(p2)}), Geometry.reference(2))


def test_table_with_alarm_column_decides_on_alarms(tmp_path):
    """With an ``alarm`` column the table's own alarm rows act (here: hold speed), not the fail-safe."""
    g = Geometry.reference(1)
    rows = [r + ",0" for r in _full_rows(g)] + [r + ",1" for r in _full_rows(g)]
    rows = [r.split(",") for r in rows]
    p = _table(tmp_path, [",".join([a, b, c, f, d, e]) for a, b, c, d, e, f in rows],
               "x,v,kind,alarm,next_x,next_v")
    k = state_controller(resolve_controller({"policy": str(p)}), g, action="stop_now")
    s = np.array([g.index(2, 1)])
    assert g.describe(int(k(s, ("empty", "!alarm"))[0])) == "(x=3, v=1)"  # table: keep speed
    k2 = state_controller(resolve_controller("braking_rule"), g, action="stop_now")
    assert g.describe(int(k2(s, ("empty", "!alarm"))[0])) == "(x=3, v=0)"  # fail-safe stop_now


def test_json_cells_that_are_not_integers_name_their_row(tmp_path):
    rows = [{"x": 1, "v": 0, "kind": "ped", "next_x": 1, "next_v": 0},
            {"x": True, "v": 0, "kind": "obs", "next_x": 1, "next_v": 0}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(rows))
    with pytest.raises(VerificationError, match=r"t\.json: row 2, column 'x': expected an integer, got True"):
        load_policy(p)
    rows[1]["x"] = 1.5
    p.write_text(json.dumps(rows))
    with pytest.raises(VerificationError, match=r"row 2, column 'x': expected an integer, got 1\.5"):
        load_policy(p)
    rows[1]["x"] = 2.0  # an integral float is accepted
    p.write_text(json.dumps(rows))
    assert load_policy(p).x.tolist() == [1, 2]
