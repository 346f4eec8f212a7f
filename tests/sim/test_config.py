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
