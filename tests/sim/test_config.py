"""The shipped `episodes` section validates, matches the code defaults, and bad values name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from perception_safety.io.config import ConfigError
from perception_safety.sim.config import EpisodesConfig, load_episodes_config

CONFIG = Path(__file__).resolve().parents[2] / "config" / "episodes.yaml"


def test_shipped_config_equals_the_defaults_and_finds_the_monitors_file() -> None:
    cfg = load_episodes_config(CONFIG)
    assert cfg.monitors_file == CONFIG.parent / "monitors.yaml"
    assert cfg.monitors_file.exists()
    assert cfg.model_copy(update={"monitors_file": None}) == EpisodesConfig()


def test_bad_value_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("episodes:\n  scenario:\n    ego:\n      speed: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"e\.yaml: episodes\.scenario\.ego\.speed: Input should be greater than 0"):
        load_episodes_config(path)
    path.write_text("episodes:\n  record:\n    storage: zip\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"episodes\.record\.storage"):
        load_episodes_config(path)


def test_stop_corridor_needs_the_simulated_cameras_mounting(tmp_path: Path) -> None:
    """The shipped monitors place their ground corridor with the demo camera's mounting (1.6 m, level): a scenario
    whose camera sits elsewhere is refused before any episode runs, naming both; without a corridor nothing to check."""
    from perception_safety.io.config import load_model
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.sim.sweep import EpisodeRunError, plan_episodes, run_sweep
    from perception_safety.sim.sweep.planning import check_camera_mount

    monitors = load_model(CONFIG.parent / "monitors.yaml", MonitorsConfig, "monitors")
    cfg = load_episodes_config(CONFIG)
    check_camera_mount(plan_episodes(cfg), monitors)  # the shipped pair agrees
    high = cfg.model_copy(update={"scenario": cfg.scenario.model_copy(update={
        "camera": cfg.scenario.camera.model_copy(update={"z": 2.2})})})
    with pytest.raises(EpisodeRunError, match=r"monitors\.camera \(height_m 1\.6, pitch_deg 0, lateral_offset_m 0\) "
                                              r"is not the simulated camera of scenario 'crossing' \(z 2\.2, "
                                              r"pitch_deg 0, y 0\)"):
        run_sweep(high, tmp_path / "out", monitors=monitors)
    assert not (tmp_path / "out").exists()  # refused before anything was written
    paper = monitors.model_copy(update={"stop_region": monitors.stop_region.model_copy(
        update={"rule": "region", "corridor": None})})
    check_camera_mount(plan_episodes(high), paper)
