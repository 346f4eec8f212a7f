"""The episode runner with a real image detector (``episodes.detector.kind: onnx``) instead of the simulated one."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from perception_safety.detectors import DetectorError
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import EpisodeEngine, monitors_for, plan_episodes

from .conftest import write_tiny_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "detectors"))
from onnx_models import constant_model, write_yaml


def _model(folder: Path, rows: list[list[float]]) -> Path:
    """A YOLO-style model (64x64 stretched input, classes person/car) that always sees ``rows`` (cx, cy, w, h, s...)."""
    folder.mkdir(parents=True, exist_ok=True)
    model = constant_model(folder / "const.onnx", {"output0": np.asarray(rows, np.float32)[None]}, [1, 3, 64, 64])
    return write_yaml(folder / "const.yaml", model, input={"width": 64, "height": 64, "resize": "stretch"},
                      output={"decoder": "yolo", "layout": "channels_last"}, classes=["person", "car"])


def test_onnx_detector_drives_the_perception_rollouts(tmp_path: Path) -> None:
    # a person at network (32, 54) 8x16 -> on the 320x180 camera: x 140..180, y 129.4..174.4 (stretch 5 x 2.8125):
    # inside the scaled stop region (68.5..251.75, 117..180) from the first frame on
    yml = _model(tmp_path / "cfg", [[32.0, 54.0, 8.0, 16.0, 0.9, 0.1]])
    cfg_path = write_tiny_config(tmp_path / "cfg", include_clean=True, perturbations=[],
                                 detector={"kind": "onnx", "onnx_model": yml.name})
    cfg = load_episodes_config(cfg_path)
    assert cfg.detector.onnx_model == yml  # relative to the episodes file
    spec = plan_episodes(cfg)[0]
    engine = EpisodeEngine(cfg, monitors=monitors_for(cfg, cfg_path))
    rollouts, _ = engine.run(spec)
    perception = rollouts["perception"].steps
    (det,) = perception[0].frame.detections
    assert det.class_id == "person" and det.score == pytest.approx(0.9)
    assert (det.box.x_min, det.box.y_min, det.box.x_max, det.box.y_max) == pytest.approx(
        (140.0, 129.375, 180.0, 174.375))
    # the (constant) detection sits in the stop region: f brakes at once; the ground-truth rollout does not
    assert perception[0].stop
    assert not rollouts["ground_truth"].steps[0].stop


def test_a_model_that_does_not_match_its_yaml_is_a_clear_error(tmp_path: Path) -> None:
    yml = _model(tmp_path / "cfg", [[32.0, 54.0, 8.0, 16.0, 0.9, 0.1, 0.2]])  # 3 class scores, YAML lists 2
    cfg_path = write_tiny_config(tmp_path / "cfg", include_clean=True, perturbations=[],
                                 detector={"kind": "onnx", "onnx_model": yml.name})
    cfg = load_episodes_config(cfg_path)
    with pytest.raises(DetectorError, match=r"episodes\.detector: .*const\.yaml: classes"):
        EpisodeEngine(cfg, monitors=monitors_for(cfg, cfg_path)).run(plan_episodes(cfg)[0])
