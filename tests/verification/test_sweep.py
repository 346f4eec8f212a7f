"""The sweep over variants/environments/speeds on the reference matrices, via the confusion loader."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.evaluation.confusion.io import confusion_from_mapping, load_matrices
from perception_safety.io.config import ConfigError, load_model
from perception_safety.verification.car_model import geometry_for
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.sweep import run_sweep, write_csv

from .conftest import REFERENCE


@pytest.fixture(scope="module")
def confusion():
    if not REFERENCE.exists():
        pytest.fail(f"reference data {REFERENCE} not found")
    return load_matrices(REFERENCE)


def pick(results, **kw):
    return [r for r in results if all(r[k] == v for k, v in kw.items())]


def test_reference_sweep_records_and_paper_trends(confusion, reference):
    cfg = VerificationConfig(max_speeds=[1, 4])
    sweep = run_sweep(confusion, cfg)
    # 4 variants x 3 envs x 5 specs x (1 + 4) initial speeds
    assert len(sweep.results) == 4 * 3 * 5 * 5
    assert set(sweep.results[0]) >= {"variant", "true_env", "spec", "max_speed", "initial_speed", "probability",
                                     "lower", "upper"}
    # V = 1: stop probability with a pedestrian = P(ped | ped) of bin [0, 10) for the by-distance variants
    for variant, kind in (("class_by_distance", "class"), ("prop_by_distance", "prop")):
        (r,) = pick(sweep.results, variant=variant, true_env="ped", spec="stop_at_k", max_speed=1)
        c = reference[kind]["counts"][0]
        j = reference[kind]["labels"].index("ped")
        assert r["probability"] == pytest.approx(c[j, j] / c[:, j].sum(), abs=1e-12)
    # pooled variant: P(ped | ped) of the sum over bins
    (r,) = pick(sweep.results, variant="class", true_env="ped", spec="stop_at_k", max_speed=1)
    pooled = reference["class"]["counts"].sum(axis=0)
    assert r["probability"] == pytest.approx(pooled[0, 0] / pooled[:, 0].sum(), abs=1e-12)
    # paper, Sec. IV: distance-parametrised >= pooled; proposition-labeled > class-labeled
    for kind in ("class", "prop"):
        near = [r["probability"] for r in pick(sweep.results, variant=f"{kind}_by_distance", true_env="ped",
                                                spec="phi", max_speed=4)]
        far = [r["probability"] for r in pick(sweep.results, variant=kind, true_env="ped", spec="phi", max_speed=4)]
        assert np.all(np.array(near) >= np.array(far)) and np.all(np.diff(near) <= 0)
    p_prop = pick(sweep.results, variant="prop_by_distance", true_env="ped", spec="phi", max_speed=4)
    p_class = pick(sweep.results, variant="class_by_distance", true_env="ped", spec="phi", max_speed=4)
    assert p_prop[0]["probability"] > p_class[0]["probability"]
    # with no pedestrian in the class-labeled data the car never sees one: phi1 holds surely
    for r in pick(sweep.results, true_env="empty", spec="phi1"):
        assert r["probability"] == pytest.approx(1.0, abs=1e-12)
    assert len(sweep.chains) == 4 * 3 * 2 and sweep.chains[0]["n_states"] == 2 * 5


def test_reference_point_estimate_inside_every_band_and_v1_band_is_clopper_pearson(confusion):
    from perception_safety.evaluation.intervals import clopper_pearson

    cfg = VerificationConfig(max_speeds=[1, 3, 5], posterior={"enabled": False})
    sweep = run_sweep(confusion, cfg)
    assert len(sweep.results) == 4 * 3 * 5 * 9 and not sweep.warnings
    for r in sweep.results:
        assert r["lower"] - 1e-12 <= r["probability"] <= r["upper"] + 1e-12, r
    assert any(r["upper"] - r["lower"] > 0.05 for r in sweep.results)
    lo, hi = clopper_pearson(31, 158, 0.05 / 3)
    for spec in ("stop_at_k", "phi"):
        (r,) = pick(sweep.results, variant="class_by_distance", true_env="ped", spec=spec, max_speed=1)
        assert (r["lower"], r["upper"]) == (pytest.approx(float(lo), abs=1e-12), pytest.approx(float(hi), abs=1e-12))
    assert all(c["bounds_exact"] and c["bounds_residual"] < 1e-11 for c in sweep.chains)
    assert {m for c in sweep.chains for m in c["bounds_methods"]} == {"certified"}


def test_bounds_can_be_switched_off(confusion):
    cfg = VerificationConfig(max_speeds=[2], variants=["prop"], bounds={"enabled": False},
                             posterior={"enabled": False})
    sweep = run_sweep(confusion, cfg)
    assert all(r["lower"] is None and r["upper"] is None for r in sweep.results)


def test_zero_column_is_reported_not_nan(reference):
    data = json.loads(REFERENCE.read_text())
    for b in data["prop_cm"]:
        for row in b:
            row[2] = 0.0  # no "ped,obs" samples at all
    dc = confusion_from_mapping(data, "edited.json")
    cfg = VerificationConfig(max_speeds=[2], variants=["prop_by_distance"], true_envs={
        "both": {"class": ["ped", "obs"], "prop": "ped,obs"}})
    with pytest.raises(VerificationError, match=r"edited.json \[prop_by_distance\].*sum to 0.0.*bin 0 \[0, 10\) m"):
        run_sweep(dc, cfg, name="edited.json")


def test_two_object_environment_class_labeled(confusion):
    cfg = VerificationConfig(max_speeds=[1], variants=["class_by_distance"], specs=["stop_at_k"],
                             true_envs={"both": {"class": ["ped", "obs"], "prop": "ped,obs"}})
    (r,) = run_sweep(confusion, cfg).results
    p = confusion.probabilities("class")[0]
    # sees a pedestrian if the pedestrian is classified ped or the obstacle is mistaken for one (eq. 9)
    assert r["probability"] == pytest.approx(1 - (1 - p[0, 0]) * (1 - p[0, 1]), abs=1e-12)


def test_beyond_last_bin_policy(confusion):
    cfg = VerificationConfig(max_speeds=[14], variants=["class_by_distance"], specs=["stop_at_k"],
                             true_envs={"ped": {"class": ["ped"], "prop": "ped"}})
    with pytest.raises(VerificationError, match="no confusion-matrix bin holds distance 106 m"):
        run_sweep(confusion, cfg)
    res = run_sweep(confusion, cfg.model_copy(update={"beyond_last_bin": "last_bin"})).results
    assert len(res) == 14 and res[0]["probability"] == pytest.approx(31 / 158, abs=1e-12)


def test_unknown_true_env_label_and_spec(confusion):
    cfg = VerificationConfig(max_speeds=[1], variants=["prop"], true_envs={"x": {"class": ["ped"], "prop": "bike"}})
    with pytest.raises(VerificationError, match="'bike' is not a proposition label"):
        run_sweep(confusion, cfg)
    with pytest.raises(VerificationError, match="unknown spec"):
        run_sweep(confusion, VerificationConfig(max_speeds=[1], specs=["nope"]))
    cfg = VerificationConfig(max_speeds=[1], custom_specs={"bad": 'P=? [F "cyclist"]'}, specs=["bad"])
    with pytest.raises(VerificationError, match=r"unknown label\(s\) \['cyclist'\]"):
        run_sweep(confusion, cfg)


def test_geometry_overrides():
    cfg = VerificationConfig.model_validate({"geometry": {"road_cells": 40, "stop_cell": 20, "crosswalk_offset": 2,
                                                           "cell_length_m": 2.5}})
    g = geometry_for(3, cfg.geometry)
    assert (g.road_cells, g.stop_cell, g.crosswalk_cell, g.cell_length_m) == (40, 20, 22, 2.5)


def test_config_errors_name_file_and_key(tmp_path):
    p = tmp_path / "v.yaml"
    p.write_text("verification:\n  variants: [class, pooled]\n")
    with pytest.raises(ConfigError, match=r"v.yaml: verification.variants.1"):
        load_model(p, VerificationConfig, section="verification")
    p.write_text("verification:\n  max_speeds: [2, -1]\n")
    with pytest.raises(ConfigError, match=r"verification.max_speeds"):
        load_model(p, VerificationConfig, section="verification")


@pytest.mark.parametrize(("text", "key"), [
    ("alpha: 1.5", "verification.alpha"),
    ("posterior: {prior: 0}", "verification.posterior.prior"),
    ("posterior: {level: 1.0}", "verification.posterior.level"),
    ("bounds: {cyclic_horizon: 0}", "verification.bounds.cyclic_horizon"),
    ("posterior: {draws: 5}", "verification.posterior.draws"),
])
def test_bad_uncertainty_settings_name_the_key(tmp_path, text, key):
    p = tmp_path / "v.yaml"
    p.write_text(f"verification:\n  {text}\n")
    with pytest.raises(ConfigError, match=rf"v.yaml: {key}"):
        load_model(p, VerificationConfig, section="verification")


def test_csv_has_full_precision(tmp_path):
    rows = ({"variant": "class", "true_env": "ped", "spec": "phi", "max_speed": 1, "initial_speed": 1,
             "probability": 1 / 3, "lower": 0.1, "upper": None},)
    text = write_csv(tmp_path / "v.csv", rows).read_text().splitlines()
    assert text[0] == "variant,true_env,spec,max_speed,initial_speed,probability,lower,upper"
    assert float(text[1].split(",")[-3]) == 1 / 3
    assert text[1].endswith(",0.10000000000000001,")  # a bound not computed is an empty cell


def test_shipped_config_is_the_default():
    from pathlib import Path

    shipped = Path(__file__).resolve().parents[2] / "config" / "verification.yaml"
    assert load_model(shipped, VerificationConfig, section="verification") == VerificationConfig()


def test_other_class_names_keep_builtin_specs_working():
    """A detector whose pedestrian class is 'person': 'ped' becomes an alias label for the built-in specs."""
    data = {
        "bin_edges": [[0, 10], [10, 20]],
        "class_labels": ["person", "car", "empty"],
        "prop_labels": ["person", "car", "person,car", "empty"],
        "class_cm": [[[3, 0, 0], [0, 5, 0], [1, 5, 9]]] * 2,
        "prop_cm": [[[3, 0, 1, 0], [0, 5, 0, 0], [0, 0, 1, 0], [1, 5, 0, 9]]] * 2,
    }
    dc = confusion_from_mapping(data, "person.json")
    cfg = VerificationConfig(max_speeds=[1], variants=["class_by_distance", "prop"], specs=["phi", "phi1"],
                             pedestrian_label="person",
                             true_envs={"ped": {"class": ["person"], "prop": "person"},
                                        "car": {"class": ["car"], "prop": "car"}})
    res = {(r["variant"], r["true_env"], r["spec"]): r["probability"] for r in run_sweep(dc, cfg).results}
    assert res[("class_by_distance", "ped", "phi")] == pytest.approx(3 / 4, abs=1e-12)
    assert res[("prop", "ped", "phi")] == pytest.approx(3 / 4, abs=1e-12)
    assert res[("class_by_distance", "car", "phi1")] == pytest.approx(1.0, abs=1e-12)
