"""``perception-safety verify`` end to end on the reference matrices."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main

from .conftest import REFERENCE


@pytest.fixture(autouse=True)
def _need_reference():
    if not REFERENCE.exists():
        pytest.fail(f"reference data {REFERENCE} not found")


def test_verify_writes_results_for_every_initial_speed(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["verify", "--matrices", str(REFERENCE), "--max-speed", "3", "--out", str(out),
                 "--export", "both"]) == 0
    doc = json.loads((out / "verification.json").read_text())
    res = doc["results"]
    assert {r["variant"] for r in res} == {"class", "class_by_distance", "prop", "prop_by_distance"}
    assert {r["true_env"] for r in res} == {"ped", "obs", "empty"}
    assert {r["spec"] for r in res} == {"stop_at_k", "phi1", "phi2", "phi3", "phi"}
    assert {r["max_speed"] for r in res} == {3} and {r["initial_speed"] for r in res} == {1, 2, 3}
    assert all(0.0 <= r["probability"] <= 1.0 for r in res)
    (r,) = [r for r in res if r["variant"] == "class_by_distance" and r["true_env"] == "ped"
            and r["spec"] == "stop_at_k" and r["initial_speed"] == 1]
    assert r["probability"] == pytest.approx(31 / 158, abs=1e-12)
    assert (out / "verification.csv").exists() and (out / "verification.svg").stat().st_size > 1000
    assert (out / "chains" / "prop_by_distance_ped_V3.drn").exists()
    assert (out / "chains" / "class_obs_V3.tra").exists()
    printed = capsys.readouterr().out
    assert "probabilities from 12 chains" in printed
    # bounds printed beside every point estimate of the plotted spec (V = 1 band: Clopper-Pearson of 31/158)
    assert "class_by_distance  v0=1: 0.1962 [0.1264, 0.2827]" in printed
    assert all(set(r) >= {"probability", "lower", "upper"} for r in doc["results"])
    assert doc["bounds"]["alpha"] == 0.05 and doc["warnings"] == []


def test_verify_custom_formula_and_errors(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["verify", "--matrices", str(REFERENCE), "--max-speed", "2", "--spec", "late", "--formula",
                 'late=P=? [F "past_k"]', "--no-plot", "--out", str(out)]) == 0
    res = json.loads((out / "verification.json").read_text())["results"]
    assert {r["spec"] for r in res} == {"late"}
    assert main(["verify", "--matrices", str(REFERENCE), "--max-speed", "2", "--formula",
                 'x=P=? [F "nolabel"]', "--out", str(out)]) == 2
    assert "unknown label(s) ['nolabel']" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["verify", "--matrices", str(bad), "--out", str(out)]) == 2
    assert "bad.json:1:2: invalid JSON" in capsys.readouterr().err


def test_verify_reads_confusion_json_of_the_confusion_writer(tmp_path):
    """The confusion CLI's own format (written by confusion_io.write_json) gives the same numbers."""
    from perception_safety.evaluation.confusion.io import load_matrices, write_json

    own = write_json(tmp_path / "confusion.json", load_matrices(REFERENCE))
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["--max-speed", "2", "--spec", "phi", "--no-plot"]
    assert main(["verify", "--matrices", str(own), *args, "--out", str(a)]) == 0
    assert main(["verify", "--matrices", str(REFERENCE), *args, "--out", str(b)]) == 0
    ra = json.loads((a / "verification.json").read_text())["results"]
    rb = json.loads((b / "verification.json").read_text())["results"]
    assert [r["probability"] for r in ra] == pytest.approx([r["probability"] for r in rb], abs=1e-12)
    assert len(ra) == 4 * 3 * 2


def test_verify_with_config_file(tmp_path):
    cfg = tmp_path / "v.yaml"
    cfg.write_text(
        "verification:\n"
        "  max_speeds: [1, 2]\n"
        "  variants: [prop_by_distance]\n"
        "  true_envs: {ped: {class: [ped], prop: ped}}\n"
        "  specs: [stop_at_k]\n"
        "  geometry: {cell_length_m: 5.0}\n"
        "  plot: {true_env: ped, spec: stop_at_k}\n"
    )
    out = tmp_path / "o"
    assert main(["verify", "--matrices", str(REFERENCE), "--config", str(cfg), "--out", str(out)]) == 0
    res = json.loads((out / "verification.json").read_text())["results"]
    assert [(r["max_speed"], r["initial_speed"]) for r in res] == [(1, 1), (2, 1), (2, 2)]
    # 5 m cells, V = 2 (k = 4, crosswalk 5): from (1, 2) the car must see the pedestrian at x = 1 (20 m, bin 2)
    # and at x = 3 (10 m, bin 1); "sees" = predicted set contains ped (rows ped and ped,obs)
    import numpy as np

    counts = np.array(json.loads(REFERENCE.read_text())["prop_cm"], dtype=float)
    see = [(counts[b, 0, 0] + counts[b, 2, 0]) / counts[b, :, 0].sum() for b in range(3)]
    assert res[2]["probability"] == pytest.approx(see[2] * see[1], abs=1e-12)
    bad = tmp_path / "bad.yaml"
    bad.write_text("verification:\n  export: zip\n")
    assert main(["verify", "--matrices", str(REFERENCE), "--config", str(bad), "--out", str(out)]) == 2
