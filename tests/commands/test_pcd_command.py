"""``perception-safety pcd``: JSON interface, table, figures, several inputs, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.dataset import write_jsonl_frames

PCD_REF = Path(__file__).resolve().parents[2] / "reference" / "pcd"


def test_reference_mode_on_demo_csv(tmp_path, capsys):
    golden = json.loads((PCD_REF / "demo_notebook_golden.json").read_text())["result"]
    out = tmp_path / "out"
    code = main(
        [
            "pcd",
            str(PCD_REF / "demo_notebook.csv"),
            "--method",
            "reference",
            "--out",
            str(out),
            "--no-plots",
            "--n-boot",
            "0",
        ]
    )
    assert code == 0
    doc = json.loads((out / "pcd.json").read_text())
    entry = doc["inputs"][0]
    np.testing.assert_allclose(entry["change_points"], golden["change_points"], atol=1e-9)
    assert entry["grid"]["y_t"] == golden["grid_values"] and entry["grid"]["p_t"] == golden["grid_values"]
    np.testing.assert_allclose(entry["grid"]["pcd"], golden["pcd_grid_new_rule_rows_yt_cols_pt"], atol=1e-6)
    assert entry["mpcd"] == pytest.approx(golden["mpcd_new_rule"], abs=1e-6)
    assert doc["mpcd"] == entry["mpcd"] and doc["change_points"] == entry["change_points"]
    assert "demo_notebook" in capsys.readouterr().out
    assert (out / "pcd_table.csv").read_text().count("\n") == 2


def write_csv(path: Path, seed: int, noisy_from: float) -> Path:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 100, 300))
    y = np.clip(0.9 - 0.006 * x + rng.normal(0, 1, x.size) * np.where(x < noisy_from, 0.02, 0.15), 0, 1)
    path.write_text("distance_m,y\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(x, y, strict=True)))
    return path


def test_two_inputs_side_by_side(tmp_path):
    a = write_csv(tmp_path / "clear.csv", 1, 70.0)
    b = write_csv(tmp_path / "rain.csv", 2, 30.0)
    out = tmp_path / "cmp"
    assert main(["pcd", str(a), str(b), "--out", str(out), "--n-boot", "20"]) == 0
    doc = json.loads((out / "pcd.json").read_text())
    assert [e["label"] for e in doc["inputs"]] == ["clear", "rain"]
    assert doc["method"] == "paper" and "mpcd" not in doc
    for e in doc["inputs"]:
        assert e["change_points"] == sorted(e["change_points"])
        assert len(e["grid"]["pcd"]) == 9 and all(len(r) == 9 for r in e["grid"]["pcd"])
    assert (out / "pcd_fit.svg").stat().st_size > 0 and (out / "pcd_surface.svg").stat().st_size > 0


def sedan_frames() -> list[Frame]:
    frames = []
    for i in range(60):
        d = 5.0 + i
        score = max(0.0, 0.95 - 0.012 * i)
        dets = (Detection(Box(100, 100, 150, 140), "car", score),) if score > 0.1 else ()
        gts = (
            GroundTruthObject(Box(100, 100, 150, 140), "car", d, position=(d, 0.0, 0.0), track_id="sedan"),
            GroundTruthObject(Box(400, 100, 420, 140), "person", d / 2, position=(d / 2, 0.0, 0.0), track_id="p"),
        )
        frames.append(Frame(stamp_ns=1000 + i, detections=dets, ground_truth=gts))
    return frames


def test_jsonl_frames_input_with_track_filter(tmp_path):
    frames = sedan_frames()
    path = tmp_path / "run.jsonl"
    write_jsonl_frames(path, frames)
    out = tmp_path / "o"
    assert main(["pcd", str(path), "--track-id", "sedan", "--out", str(out), "--no-plots", "--write-samples"]) == 0
    entry = json.loads((out / "pcd.json").read_text())["inputs"][0]
    assert entry["n"] == 60 and entry["n_missed"] == sum(1 for f in frames if not f.detections)
    # the written samples are the per-frame IoU x score of the sedan (IoU 1 here), 0 when missed
    rows = (out / "samples_run.csv").read_text().splitlines()[1:]
    expect = [(f.ground_truth[0].distance, f.detections[0].score if f.detections else 0.0) for f in frames]
    got = [(float(r.split(",")[0]), float(r.split(",")[1])) for r in rows]
    np.testing.assert_allclose(np.array(got), np.array(sorted(expect)), rtol=0, atol=1e-12)


def test_errors_exit_2_with_message(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("distance_m,y\n1,0.5\n2,x\n")
    assert main(["pcd", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert f"{bad}:3: column y" in capsys.readouterr().err
    few = tmp_path / "few.csv"
    few.write_text("distance_m,y\n1,0.5\n2,0.4\n")
    assert main(["pcd", str(few), "--out", str(tmp_path / "o")]) == 2
    assert "fewer than the 10 spline functions" in capsys.readouterr().err
    assert main(["pcd", str(tmp_path / "x.txt"), "--out", str(tmp_path / "o")]) == 2
    assert "unknown input type" in capsys.readouterr().err


def test_bag_input_gives_the_same_result_as_jsonl(tmp_path):
    from perception_safety.io.bag import write_frames

    frames = sedan_frames()
    write_jsonl_frames(tmp_path / "run.jsonl", frames)
    write_frames(tmp_path / "run_bag", frames)
    out = tmp_path / "o"
    args = ["pcd", str(tmp_path / "run.jsonl"), str(tmp_path / "run_bag"), "--class-id", "car", "--no-plots"]
    assert main([*args, "--out", str(out)]) == 0
    jsonl, bag = json.loads((out / "pcd.json").read_text())["inputs"]
    assert bag["n"] == 60
    for key in ("change_points", "grid", "mpcd", "pcd", "segments"):
        assert bag[key] == jsonl[key]


def test_hurdle_model_bootstrap_and_warnings_in_json_table_and_console(tmp_path, capsys):
    from perception_safety.evaluation.pcd.synthetic import hurdle_samples

    x, y, track = hurdle_samples(800, 3, tracks=12)
    path = tmp_path / "missed.csv"
    path.write_text(
        "distance_m,y,group\n"
        + "".join(f"{float(a)!r},{float(b)!r},t{g}\n" for a, b, g in zip(x, y, track, strict=True))
    )
    out = tmp_path / "h"
    assert main(["pcd", str(path), "--out", str(out), "--n-boot", "30"]) == 0
    doc = json.loads((out / "pcd.json").read_text())
    e = doc["inputs"][0]
    assert e["model"] == doc["model"] == "hurdle" and e["model_choice"].startswith("auto: hurdle")
    assert e["bootstrap"]["unit"] == "group" and e["bootstrap"]["n_groups"] == 12 and e["bootstrap"]["n_boot"] == 30
    assert doc["pcd_ci"] == e["pcd_ci"] and e["pcd_ci"][0] <= e["pcd"]["value"] <= e["pcd_ci"][1]
    assert e["mpcd_ci"][0] <= e["mpcd"] <= e["mpcd_ci"][1]
    assert e["p_det"]["converged"] and all("n" in s for s in e["segments"])
    assert [w["code"] for w in doc["warnings"]] == [w["code"] for w in e["warnings"]]
    assert "pcd_zero_share" in [w["code"] for w in e["warnings"]]
    printed = capsys.readouterr().out
    assert "warning [pcd_zero_share]" in printed and "auto: hurdle" in printed and "bootstrap: 30/30" in printed
    table = (out / "pcd_table.csv").read_text().splitlines()
    assert "pcd_ci_lo_m" in table[0] and ",hurdle,csv," in table[1]
    # the Gaussian model on the same data: other numbers, and the mean-fit warning
    assert main(["pcd", str(path), "--model", "gaussian", "--out", str(tmp_path / "g"), "--n-boot", "0"]) == 0
    g = json.loads((tmp_path / "g" / "pcd.json").read_text())["inputs"][0]
    assert g["model"] == "gaussian" and "pcd_ci" not in g
    assert "pcd_mean_fit" in [w["code"] for w in g["warnings"]]
