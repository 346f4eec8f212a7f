"""`tune-monitor` on hostile input: every bad parameter, value, requirement or speed is exit 2 naming it; inputs the
sweep cannot judge (no images for the contrast monitor, no ground truth, a parameter that changes nothing, a chosen
point that never alarms, no chain) are warnings on screen, in tuning.json and the report, never a silent result."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import write_frames
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.tuning.grid import TuningError, operating_points
from perception_safety.pipeline.tuning.select import parse_requirement
from tests.pipeline.test_tune_monitor import CONFIG, recorded

PARAM = ["--param", "monitors.contrast.threshold"]


def _frames(n: int, with_gt: bool, with_image: bool) -> list[Frame]:
    import numpy as np

    box = Box(20.0, 10.0, 30.0, 30.0)
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        gt = (GroundTruthObject.at_position(box, "pedestrian", (5.0, 0.0, 0.0), "p"),) if with_gt else ()
        image = rng.integers(0, 255, (36, 64, 3), dtype=np.uint8) if with_image else None
        out.append(Frame(10**9 + i * 50_000_000, (Detection(box, "pedestrian", 0.9),), gt, image=image))
    return out


def _run(tmp_path, inputs, *extra, config=CONFIG):
    (tmp_path / "c.yaml").write_text(config)
    return main(["tune-monitor", *map(str, inputs), "--config", str(tmp_path / "c.yaml"), "--out",
                 str(tmp_path / "o"), *extra])


def test_repeated_param_is_an_error():
    with pytest.raises(TuningError, match="more than once"):
        operating_points(MonitorsConfig(), ["monitors.contrast.threshold"] * 2, ["1,2", "3,4"])


@pytest.mark.parametrize("text", ["rh<=5", "rh<=1e999", "sg>=-0.1", "rh_sys<=-2"])
def test_requirement_outside_the_metric_range_is_an_error(text):
    with pytest.raises(TuningError, match="always or never met"):
        parse_requirement(text)
    assert parse_requirement("sg_sys>=-0.1").bound == -0.1  # a difference of two probabilities may be negative


@pytest.mark.parametrize(("flag", "value", "match"), [("--speed", "50", "covers speeds 1..2"),
                                                      ("--speed", "0", "covers speeds"),
                                                      ("--initial-speed", "7", "must lie in 1..2")])
def test_speed_outside_the_configs_chain_exit_2(tmp_path, capsys, flag, value, match):
    recorded(tmp_path / "bags", n_bags=1, n=4)
    assert _run(tmp_path, [tmp_path / "bags"], *PARAM, "--values", "10,20", flag, value) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # stopped before reading a bag


def test_contrast_sweep_without_images_exit_2(tmp_path, capsys):
    write_frames(tmp_path / "bags" / "run0", _frames(6, with_gt=True, with_image=False))
    config = CONFIG.replace("  contrast: {threshold: 1000}\n",
                            "  contrast: {threshold: 1000}\n  camera: {image_size: [64, 36]}\n")
    assert _run(tmp_path, [tmp_path / "bags"], *PARAM, "--values", "10,5000", config=config) == 2
    assert "no frame of the inputs carries an image" in capsys.readouterr().err


def test_some_frames_without_images_and_no_ground_truth_are_warnings(tmp_path, capsys):
    frames = _frames(6, with_gt=False, with_image=True)
    frames += [Frame(f.stamp_ns + 10**9, f.detections, f.ground_truth) for f in _frames(3, False, False)]
    write_frames(tmp_path / "bags" / "run0", frames)
    config = CONFIG.replace("  contrast: {threshold: 1000}\n",
                            "  contrast: {threshold: 1000}\n  camera: {image_size: [64, 36]}\n")
    assert _run(tmp_path, [tmp_path / "bags"], *PARAM, "--values", "10,20", config=config) == 0
    doc = json.loads((tmp_path / "o" / "tuning.json").read_text())
    text = " ".join(doc["warnings"])
    assert "3 of 9 frames carry no image" in text
    assert "no frame holds a ground-truth object" in text
    assert "never alarms" in text  # both thresholds are below the random images' contrast
    assert "same alarms on every frame" in text
    out = capsys.readouterr().out
    assert out.count("warning: ") == len(doc["warnings"])
    assert "Warning: 3 of 9 frames" in (tmp_path / "o" / "tuning.html").read_text()


def test_a_config_without_a_verification_section_warns_that_no_system_figure_was_computed(tmp_path):
    recorded(tmp_path / "bags", n_bags=1, n=8)
    config = CONFIG.replace("verification:\n  max_speeds: [2]\n"
                            "  monitor_loop: {variants: [prop], mission_loss_envs: [obs]}\n", "")
    assert "verification" not in config
    assert _run(tmp_path, [tmp_path / "bags"], *PARAM, "--values", "10,5000", config=config) == 0
    doc = json.loads((tmp_path / "o" / "tuning.json").read_text())
    assert any(w.startswith("SG_sys/RH_sys/AC_sys computed at no point") for w in doc["warnings"])
