"""`evaluate` configured against its inputs: centre-distance matching on image boxes (pixels, not metres) is a
warning; a `model_check` folder without a run and a `tuning` section that cannot run stop with exit 2 before any
input is read (not after the whole evaluation)."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main
from tests.pipeline.test_tune_monitor import recorded

BASE = """evaluate:
  analyses: [confusion]
confusion:
  classes: {ped: [pedestrian], obs: [car]}
bags:
  topics: {camera_info: '', ego: '', candidates: '', monitor_results: ''}
"""


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    root = tmp_path_factory.mktemp("image_bags")
    recorded(root, n_bags=2, n=8)  # image detections: pixel boxes, no position
    return root


def test_centre_distance_on_image_boxes_warns(bags, tmp_path):
    (tmp_path / "c.yaml").write_text(BASE.replace("  classes:", "  matching: centre_distance\n  classes:"))
    assert main(["evaluate", str(bags), "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o")]) == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    (w,) = [w for w in res["warnings"] if w["code"] == "centre_distance_on_image_boxes"]
    # every detection of the recording is an image box (no position); the ground truth carries positions
    assert "carry no ego-frame position" in w["message"] and "pixels" in w["message"]
    assert "carry no ego-frame position (image boxes in pixels)" in (tmp_path / "o" / "report.html").read_text()


@pytest.mark.parametrize(("section", "message"), [
    ("model_check:\n  model: nowhere\n", "model_check.model: "),
    ("tuning:\n  params: [monitors.contrast.threshold]\n  values: ['10,20']\n  require: ['rh<=2']\n",
     "config section tuning (params/values/require/speed as tune-monitor's flags): --require 'rh<=2'"),
    ("tuning:\n  params: [monitors.contrast.treshold]\n  values: ['10,20']\n", "no key 'treshold'"),
    ("tuning:\n  params: [monitors.contrast.threshold]\n  values: ['10']\n  speed: 9\n"
     "verification:\n  max_speeds: [2]\n", "--speed 9"),
    ("episodes:\n  monitors_file: nowhere.yaml\ntuning:\n  params: [monitors.contrast.threshold]\n  values: ['10']\n",
     "nowhere.yaml"),
])
def test_a_section_that_cannot_run_stops_before_reading(bags, tmp_path, capsys, section, message):
    (tmp_path / "c.yaml").write_text(BASE + section)
    assert main(["evaluate", str(bags), "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err
    assert not list((tmp_path / "o").glob("partials/*.json"))  # no input was read
