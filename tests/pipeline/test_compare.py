"""`compare`: shared metrics with differences, interval-based significance, requirements, CI exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.pipeline.compare import Value, compare, compare_values, metrics_of


def _results(tp: int, gt: int, sg: float, req: str, pcd=(10.0, 8.0, 12.0)) -> dict:
    return {
        "format": "perception_safety.results/1",
        "run_id": "20260101T000000Z-0000abcd",
        "complete": True,
        "confusion": {
            "metrics": [
                {
                    "bin": "pooled",
                    "lo": 0,
                    "hi": 100,
                    "label": "ped",
                    "ground_truth": gt,
                    "true_positives": tp,
                    "predicted": tp,
                    "recall": tp / gt,
                    "precision": 1.0,
                },
                {
                    "bin": "pooled",
                    "lo": 0,
                    "hi": 100,
                    "label": "empty",
                    "ground_truth": 0,
                    "true_positives": 0,
                    "predicted": 0,
                    "recall": None,
                    "precision": None,
                },
            ]
        },
        "pcd": {
            "pedestrian": {
                "pcd": {"value": pcd[0], "lower": pcd[1], "upper": pcd[2], "y_t": 0.5, "p_t": 0.5},
                "pcd_ci": [pcd[1], pcd[2]],
                "mpcd": 5.0,
                "n": 50,
            }
        },
        "returns": {"E2": {"frames": {"SG": sg, "RH": 0.1, "AC": 0.2, "hazard_f": sg + 0.1, "n": 100}}},
        "requirements": {"items": [{"label": "ped recall", "status": req, "value": tp / gt}]},
        "provenance": {"version": "0.1.0", "git_commit": "abc", "date_utc": "2026-01-01T00:00:00Z"},
    }


def test_direction_and_significance():
    a = Value("recall", "confusion", 0.5, 0.45, 0.55)
    assert compare_values(a, Value("recall", "confusion", 0.7, 0.65, 0.75)).significant is True
    row = compare_values(a, Value("recall", "confusion", 0.52, 0.47, 0.57))
    assert row.significant is False and row.change == "better" and row.diff == pytest.approx(0.02)
    rh = Value("RH", "returns", 0.1, higher_is_better=False)
    row = compare_values(rh, Value("RH", "returns", 0.2, higher_is_better=False))
    assert row.change == "worse" and row.significant is None  # no interval: not testable


def test_rates_without_stored_interval_get_clopper_pearson():
    (v,) = [m for m in metrics_of(_results(30, 60, 0.0, "PASS")).values() if m.key.startswith("recall")]
    lo, hi = clopper_pearson(30, 60)
    assert (v.lower, v.upper, v.n) == (pytest.approx(float(lo)), pytest.approx(float(hi)), 60)


def test_compare_command_exit_codes(tmp_path, capsys):
    for name, doc in (
        ("a", _results(180, 200, 0.3, "PASS")),
        ("b", _results(100, 200, 0.1, "FAIL", pcd=(3.0, 2.0, 4.0))),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "significantly worse: recall 'ped' pooled: 0.9 -> 0.5" in printed
    doc = json.loads((out / "compare.json").read_text())
    assert doc["summary"]["requirements_regressed"] == ["ped recall"]
    by_key = {r["key"]: r for r in doc["rows"]}
    assert by_key["PCD 'pedestrian' (m)"]["significant"] is True and by_key["PCD 'pedestrian' (m)"]["diff"] == -7.0
    assert by_key["SG (E2, per frame)"]["change"] == "worse" and by_key["SG (E2, per frame)"]["significant"] is None
    html = (out / "compare.html").read_text()
    assert "Requirements side by side" in html and "worse ▼" in html
    # the other direction: B better everywhere, nothing regressed
    assert main(["compare", str(tmp_path / "b"), str(tmp_path / "a"), "--out", str(tmp_path / "c2")]) == 0
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out), "--fail-on", "never"]) == 0
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_identical_runs_are_the_same_everywhere():
    doc = compare(_results(30, 60, 0.0, "PASS"), _results(30, 60, 0.0, "PASS"))
    assert doc["summary"]["worse"] == doc["summary"]["better"] == 0 and all(r["change"] == "same" for r in doc["rows"])


def _clustered(tp_by_episode, gt_by_episode, iou: float, inputs=("h1", "h2")) -> dict:
    """A results document with per-episode counts of 'ped' (pooled only) and its config and inputs."""
    tp, gt = np.asarray(tp_by_episode), np.asarray(gt_by_episode)
    e = len(tp)
    pooled = np.zeros((e, 2, 2), dtype=int)  # labels [ped, empty]: [e, pred, true]
    pooled[:, 0, 0], pooled[:, 1, 0] = tp, gt - tp
    doc = _results(int(tp.sum()), int(gt.sum()), 0.1, "PASS")
    doc["confusion"].update({
        "class_labels": ["ped", "empty"], "bin_edges": [[0.0, 100.0]],
        "clusters": {"unit": "episode", "ids": [f"ep{i}" for i in range(e)], "frames": [10] * e,
                     "class_cm": pooled[:, None].tolist(), "class_cm_pooled": pooled.tolist(),
                     "unmatched": np.zeros((e, 2, 1), dtype=int).tolist()},
    })
    doc["config"] = {"confusion": {"iou_threshold": iou, "classes": {"ped": ["pedestrian"]}}}
    doc["provenance"]["inputs"] = [{"path": f"/bags/{h}", "sha256": h, "excluded": None} for h in inputs]
    return doc


def test_same_inputs_are_tested_paired_and_differing_configs_are_named():
    rng = np.random.default_rng(2)
    gt = rng.integers(30, 50, 25)
    tp_a = rng.binomial(gt, rng.uniform(0.5, 0.9, 25))
    tp_b = np.maximum(0, tp_a - rng.binomial(gt, 0.05))  # B misses a few more in every episode
    doc = compare(_clustered(tp_a, gt, 0.5), _clustered(tp_b, gt, 0.7))
    assert doc["pairing"] == "paired"
    (w,) = [w for w in doc["warnings"] if w["kind"] == "config"]
    assert "confusion.iou_threshold: 0.5 vs 0.7" in w["message"]
    row = {r["key"]: r for r in doc["rows"]}["recall 'ped' pooled"]
    assert row["test"] == "paired bootstrap over episodes" and row["significant"] is True
    assert row["diff_interval"][1] < 0 and row["change"] == "worse"
    ia, ib = row["a_interval"], row["b_interval"]
    assert not (ia[1] < ib[0] or ib[1] < ia[0])  # the disjoint-interval rule would have said "no"


def test_other_inputs_are_independent_and_named():
    doc = compare(_clustered([20, 30], [40, 40], 0.5), _clustered([20, 30], [40, 40], 0.5, inputs=("h1", "h9")))
    assert doc["pairing"] == "overlapping"
    (w,) = doc["warnings"]
    assert w["kind"] == "inputs" and "1 only in A, 1 only in B, 1 shared" in w["message"]
    row = {r["key"]: r for r in doc["rows"]}["recall 'ped' pooled"]
    assert row["test"].startswith("disjoint 95 % intervals")


def test_paired_without_episodes_uses_mcnemar_at_the_worst_case():
    a, b = _results(90, 100, 0.1, "PASS"), _results(70, 100, 0.1, "PASS")
    for d in (a, b):
        d["provenance"]["inputs"] = [{"path": "/bags/x", "sha256": "hx", "excluded": None}]
    row = {r["key"]: r for r in compare(a, b)["rows"]}["recall 'ped' pooled"]
    assert row["test"] == "McNemar exact, worst-case discordance" and row["significant"] is True
    assert row["p_value"] < 0.05
