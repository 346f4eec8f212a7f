"""Config loading: safe YAML, and errors that name the file, the key and what was expected."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from perception_safety.io.config import ConfigError, load_model, load_yaml


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(0.5, ge=0, le=1)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "x"
    inner: Inner = Inner()


def test_valid_section_and_defaults(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("sec:\n  name: y\n  inner: {threshold: 0.25}\nother: 1\n")
    assert load_model(f, Section, "sec") == Section(name="y", inner=Inner(threshold=0.25))
    assert load_model(f, Section, "absent") == Section()
    assert load_model(None, Section) == Section()


def test_validation_error_names_file_key_and_expectation(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("sec:\n  inner: {threshold: 7}\n")
    with pytest.raises(ConfigError) as err:
        load_model(f, Section, "sec")
    msg = str(err.value)
    assert str(f) in msg and "sec.inner.threshold" in msg and "less than or equal to 1" in msg and "got 7" in msg


def test_unknown_key_is_named(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("sec:\n  nmae: y\n")
    with pytest.raises(ConfigError, match=r"sec\.nmae: Extra inputs are not permitted"):
        load_model(f, Section, "sec")


def test_invalid_yaml_names_line_and_column(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("sec:\n  name: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"{f}:\d+:\d+: invalid YAML"):
        load_yaml(f)


def test_yaml_is_loaded_safely(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("x: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_yaml(f)


def test_non_mapping_and_missing_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_yaml(f)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_yaml(tmp_path / "missing.yaml")
