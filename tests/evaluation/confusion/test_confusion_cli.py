"""The ``perception-safety confusion`` command on JSON Lines, bags and matrix files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from perception_safety.cli import main
from perception_safety.evaluation.confusion.io import load_matrices
from perception_safety.io.dataset import write_jsonl_frames

from .test_accumulate import hand_scene

REFERENCE = (
    Path(__file__).resolve().parents[3] / "reference" / "dist_confusion_matrices_nuscenes_yolov3.json"
)
CONFIG = "confusion:\n  classes: {ped: [ped], obs: [obs]}\n  bin_edges: [0, 10, 20, 30]\n  dpi: 40\n"


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "scene.jsonl"
    write_jsonl_frames(data, hand_scene())
    cfg = tmp_path / "confusion.yaml"
    cfg.write_text(CONFIG)
    return data, cfg


def test_jsonl_to_json_csv_and_heatmaps(tmp_path: Path, dataset: tuple[Path, Path], capsys) -> None:
    data, cfg = dataset
    out = tmp_path / "out"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(out)]) == 0
    doc = json.loads((out / "confusion.json").read_text())
    assert doc["bin_edges"] == [[0.0, 10.0], [10.0, 20.0], [20.0, 30.0]]
    assert doc["class_labels"] == ["ped", "obs", "empty"]
    assert doc["prop_labels"] == ["ped", "obs", "ped,obs", "empty"]
    assert doc["class_cm"][0] == [[1, 1, 0], [0, 0, 0], [0, 0, 2]]
    assert doc["class_cm_pooled"] == [[2, 1, 0], [1, 1, 0], [0, 1, 1]]
    assert doc["prop_cm"][2][2][0] == 1
    assert doc["class_p"][1][2][1] == pytest.approx(0.5)
    assert doc["report"]["ground_truth_beyond_range"] == 1
    metrics = {(m["bin"], m["label"]): m for m in doc["metrics"]}
    assert metrics[("pooled", "ped")]["recall"] == pytest.approx(2 / 3)
    assert metrics[("1", "ped")]["recall"] is None
    rows = list(csv.DictReader((out / "confusion_metrics.csv").open()))
    assert len(rows) == 2 * 4
    svgs = sorted(p.name for p in out.glob("*.svg"))
    assert "class_cm_bin02.svg" in svgs and "prop_cm_grid.svg" in svgs and len(svgs) == 2 * (3 + 2)
    assert "recall ped" in capsys.readouterr().out
    # The written file loads back through the shared loader with the pooled matrices it holds.
    dc = load_matrices(out / "confusion.json")
    assert dc.pooled_method == "single_bin" and dc.class_cm_pooled.tolist() == doc["class_cm_pooled"]


def test_bag_input_gives_the_same_matrices(tmp_path: Path, dataset: tuple[Path, Path]) -> None:
    from perception_safety.io.bag import write_frames

    data, cfg = dataset
    bag = tmp_path / "bag"
    write_frames(bag, hand_scene())
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(a), "--no-plots"]) == 0
    assert main(["confusion", str(bag), "--config", str(cfg), "--out", str(b), "--no-plots"]) == 0
    da, db = load_matrices(a / "confusion.json"), load_matrices(b / "confusion.json")
    assert np.array_equal(da.class_cm, db.class_cm) and np.array_equal(da.prop_cm, db.prop_cm)


def test_csv_input_gives_the_same_matrices(tmp_path: Path, dataset: tuple[Path, Path]) -> None:
    from .test_io import _csv_of

    data, cfg = dataset
    table = tmp_path / "scene.csv"
    table.write_text(_csv_of(hand_scene()))
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(a), "--no-plots"]) == 0
    assert main(["confusion", str(table), "--config", str(cfg), "--out", str(b), "--no-plots"]) == 0
    da, db = load_matrices(a / "confusion.json"), load_matrices(b / "confusion.json")
    assert np.array_equal(da.class_cm, db.class_cm) and np.array_equal(da.prop_cm_pooled, db.prop_cm_pooled)


def test_matrix_files_are_summed(tmp_path: Path, dataset: tuple[Path, Path]) -> None:
    data, cfg = dataset
    one = tmp_path / "one"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(one), "--no-plots"]) == 0
    two = tmp_path / "two"
    m = str(one / "confusion.json")
    assert main(["confusion", m, m, "--out", str(two), "--no-plots"]) == 0
    single, double = load_matrices(m), load_matrices(two / "confusion.json")
    assert np.array_equal(double.class_cm, 2 * single.class_cm)
    assert np.array_equal(double.prop_cm_pooled, 2 * single.prop_cm_pooled)


@pytest.mark.usefixtures("shared_reference")
def test_reference_file_renders(tmp_path: Path) -> None:
    out = tmp_path / "ref"
    assert main(["confusion", str(REFERENCE), "--out", str(out), "--no-plots"]) == 0
    doc = json.loads((out / "confusion.json").read_text())
    assert doc["class_cm"][0] == [[31, 0, 0], [0, 191, 0], [127, 734, 3227]]
    assert doc["pooled_method"] == "sum_of_bins"


def test_errors_name_the_file(tmp_path: Path, dataset: tuple[Path, Path], capsys) -> None:
    data, _ = dataset
    assert main(["confusion", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("confusion:\n  bin_edges: [0, 5, 5]\n")
    assert main(["confusion", str(data), "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "confusion.bin_edges" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"frame": "a"}\n{"frame": "b", "detections": [{"box": [0, 0, 1], "class": "ped"}]}\n')
    assert main(["confusion", str(broken), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert "broken.jsonl:2" in capsys.readouterr().err
    out = tmp_path / "skip"
    assert main(["confusion", str(broken), "--out", str(out), "--no-plots", "--skip-bad"]) == 0
    doc = json.loads((out / "confusion.json").read_text())
    assert doc["report"]["frames"] == 1 and "broken.jsonl:2" in doc["input_notes"][0]


def test_mismatched_bins_are_an_error(tmp_path: Path, dataset: tuple[Path, Path], capsys) -> None:
    data, cfg = dataset
    one = tmp_path / "one"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(one), "--no-plots"]) == 0
    rc = main(["confusion", str(one / "confusion.json"), str(REFERENCE), "--out", str(tmp_path / "x"), "--no-plots"])
    assert rc == 2 and "bin_edges" in capsys.readouterr().err


def test_progress_wrapper_passes_every_frame_through() -> None:
    from perception_safety.commands.confusion import _progress

    frames = hand_scene() * 400  # crosses the 512-frame update step
    assert list(_progress(iter(frames), "scene", enabled=True)) == frames
    assert list(_progress(iter(frames), "scene", enabled=False)) == frames
