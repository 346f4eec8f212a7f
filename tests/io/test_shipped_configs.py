"""Every shipped config section validates against its model (a typo in config/ fails here)."""

from __future__ import annotations

from pathlib import Path

from perception_safety.io.bag import BagConfig
from perception_safety.io.config import load_model, load_yaml

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_bags_config_validates():
    cfg = load_model(CONFIG / "bags.yaml", BagConfig, "bags")
    assert cfg.topics.detections == "/detections" and cfg.tolerance_ns == 0


def test_every_yaml_in_config_is_safe_yaml_mapping():
    for path in sorted(CONFIG.glob("*.yaml")):
        assert isinstance(load_yaml(path), dict), path
