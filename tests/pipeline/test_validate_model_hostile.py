"""`validate-model` on damaged or mismatched inputs: every case is exit 2 naming the file or the difference, never a
traceback (partials that are lists, lack keys or come from another version; bins that differ; unreadable new bags)."""

from __future__ import annotations

import json
import shutil

import pytest

from perception_safety.cli import main
from tests.pipeline.test_validate_model import CONFIG, record


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("validity_hostile")
    (root / "c.yaml").write_text(CONFIG.replace("analyses: [confusion, verification]", "analyses: [confusion]"))
    record(root / "old", seed=1, p_ped=0.85, episodes=3, frames=8)
    record(root / "new", seed=2, p_ped=0.85, episodes=2, frames=8)
    assert main(["evaluate", str(root / "old"), "--config", str(root / "c.yaml"), "--out", str(root / "run")]) == 0
    return root


def _validate(model, run, inputs="new", config="c.yaml"):
    return main(["validate-model", str(run), str(model / inputs), "--config", str(model / config),
                 "--out", str(run.parent / (run.name + "_out"))])


@pytest.mark.parametrize(("content", "message"), [
    ("[1, 2]", "a JSON list"),
    ("{}", "format None"),
    ('{"format": "perception_safety.partial/1"}', "format 'perception_safety.partial/1'"),
    (None, "'episodes' missing or not a list"),
])
def test_damaged_partial_is_named(model, tmp_path, capsys, content, message):
    run = tmp_path / "run"
    shutil.copytree(model / "run", run)
    victim = sorted((run / "partials").glob("*.json"))[-1]
    if content is None:
        doc = json.loads(victim.read_text())
        del doc["episodes"]
        content = json.dumps(doc)
    victim.write_text(content)
    assert _validate(model, run) == 2
    err = capsys.readouterr().err
    assert victim.name in err and message in err and "Traceback" not in err


def test_other_bins_name_both_sides(model, capsys):
    text = (model / "c.yaml").read_text().replace("bin_edges: [0, 10, 20, 30]", "bin_edges: [0, 15, 30]")
    (model / "bins.yaml").write_text(text)
    assert _validate(model, model / "run", config="bins.yaml") == 2
    err = capsys.readouterr().err
    assert "model bins [[0.0, 10.0]" in err and "new bins [[0.0, 15.0]" in err


def test_unreadable_new_bags_are_named(model, capsys):
    (model / "bad" / "b1").mkdir(parents=True)
    (model / "bad" / "b1" / "metadata.yaml").write_text("garbage\n")
    assert _validate(model, model / "run", inputs="bad") == 2
    err = capsys.readouterr().err
    assert "gave no confusion counts" in err and "b1" in err


def test_an_empty_new_input_folder_is_named(model, capsys):
    (model / "empty").mkdir()
    assert _validate(model, model / "run", inputs="empty") == 2
    err = capsys.readouterr().err
    assert "no usable bag among the new inputs" in err and "empty" in err
