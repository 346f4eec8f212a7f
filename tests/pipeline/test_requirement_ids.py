"""Issue 25 item 8: two requirements with the same id (or the same implicit label) are a config error."""

from __future__ import annotations

import pytest

from perception_safety.io.config import ConfigError
from perception_safety.pipeline.evaluate_config import load_evaluate_config

BASE = """
evaluate:
  analyses: [confusion]
confusion:
  classes: {ped: [pedestrian]}
requirements:
"""


def test_duplicate_requirement_id_names_both_entries(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE + "  - {id: ped-recall, metric: recall, class: ped, at_least: 0.9}\n"
                           "  - {id: ped-recall, metric: precision, class: ped, at_least: 0.8}\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: requirements\.1: duplicate id 'ped-recall': also requirements\.0"):
        load_evaluate_config(path)


def test_same_metric_and_selectors_without_ids_is_a_duplicate(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE + "  - {metric: recall, class: ped, at_least: 0.9}\n"
                           "  - {metric: recall, class: ped, at_least: 0.8, bound: lower}\n")
    with pytest.raises(ConfigError, match=r"requirements\.1: duplicate requirement .*give each an 'id'"):
        load_evaluate_config(path)
    path.write_text(BASE + "  - {metric: recall, class: ped, at_least: 0.9}\n"
                           "  - {id: ped-lower, metric: recall, class: ped, at_least: 0.8, bound: lower}\n")
    cfg, _ = load_evaluate_config(path)
    assert [r.label() for r in cfg.requirements] == ["recall(class=ped)", "ped-lower"]
