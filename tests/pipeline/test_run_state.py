"""Issue 25 item 7: no stale results. A failed `evaluate` never leaves the previous run's outputs looking current;
results.json carries the run id and `complete: true` (written last); `--check` and `compare` accept nothing else."""

from __future__ import annotations

import json
import shutil

import pytest

from perception_safety.cli import main
from perception_safety.pipeline.run_state import IncompleteResultsError, load_complete_results


@pytest.fixture
def finished_out(evaluated, tmp_path):
    """A copy of a finished evaluate output folder (the module-scoped `evaluated` run)."""
    out = tmp_path / "out"
    shutil.copytree(evaluated[0], out)
    return out, json.loads((out / "results.json").read_text())


def test_a_finished_run_has_an_id_and_complete_true(evaluated):
    out, results, _ = evaluated
    assert results["complete"] is True and isinstance(results["run_id"], str) and len(results["run_id"]) > 16
    assert list(results)[:3] == ["format", "run_id", "complete"]
    assert load_complete_results(out)["run_id"] == results["run_id"]
    assert "Evaluation run" not in (out / "report.html").read_text()  # the real report, not the marker


def test_failed_run_marks_the_old_outputs_and_compare_refuses_them(finished_out, evaluated, tmp_path, capsys):
    out, old = finished_out
    assert main(["evaluate", str(tmp_path / "no_bags_here"), "--out", str(out)]) == 2
    capsys.readouterr()
    doc = json.loads((out / "results.json").read_text())
    assert doc["complete"] is False and doc["status"] == "failed" and doc["previous_run_id"] == old["run_id"]
    assert doc["run_id"] != old["run_id"] and "not a rosbag2 bag directory" in doc["error"]
    page = (out / "report.html").read_text()
    assert f"Evaluation run {doc['run_id']}: failed" in page and "not current" in page
    assert main(["frames", str(out)]) == 2  # the evidence of a failed run is not read either
    assert f"incomplete results of run {doc['run_id']}" in capsys.readouterr().err
    assert main(["compare", str(evaluated[0]), str(out), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert f"incomplete results of run {doc['run_id']} (failed: {tmp_path / 'no_bags_here'}: not a rosbag2" in err


def test_a_bad_config_also_marks_the_old_outputs(finished_out, recorded_bags, tmp_path, capsys):
    out, old = finished_out
    bad = tmp_path / "bad.yaml"
    bad.write_text("evaluate:\n  analyses: [confusion]\n  analyses: [pcd]\n")
    assert main(["evaluate", str(recorded_bags[0]), "--config", str(bad), "--out", str(out), "--check"]) == 2
    assert "duplicate key 'analyses'" in capsys.readouterr().err
    doc = json.loads((out / "results.json").read_text())
    assert doc["status"] == "failed" and doc["previous_run_id"] == old["run_id"]
    with pytest.raises(IncompleteResultsError, match="duplicate key"):
        load_complete_results(out)


def test_check_gates_on_the_results_this_run_wrote(recorded_bags, tmp_path, capsys):
    root, _, config = recorded_bags
    out = tmp_path / "gate"
    assert main(["evaluate", str(root), "--config", str(config), "--out", str(out), "--check"]) == 0
    doc = load_complete_results(out)
    with pytest.raises(IncompleteResultsError, match=f"written by run {doc['run_id']}, not by this run other"):
        load_complete_results(out, "other")
