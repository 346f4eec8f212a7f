"""Hostile config files (issue 19 item 7): each gives a ConfigError naming the file, never a hang or traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perception_safety.cli import main
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.io.config import MAX_DEPTH, ConfigError, load_model, load_yaml
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.sim.config import EpisodesConfig


def _write(tmp_path: Path, text: str | bytes, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def test_alias_bomb_is_refused_with_position(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")  # 10**10 values once expanded
    path = _write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:\d+:\d+: invalid YAML: expands to more than"):
        load_yaml(path)


def test_aliases_within_bounds_still_work(tmp_path):
    path = _write(tmp_path, "base: &b {iou_threshold: 0.3}\nconfusion: *b\n")
    assert load_model(path, ConfusionConfig, section="confusion").iou_threshold == 0.3


def test_non_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path, b"confusion:\n  iou_threshold: 0.5\n  note: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:3: not UTF-8"):
        load_yaml(path)


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting_is_refused(tmp_path, opener):
    closer = "]" if opener == "[" else "}"
    depth = 100_000
    path = _write(tmp_path, "x: " + opener * depth + "1" + closer * depth + "\n")
    with pytest.raises(ConfigError, match=rf"c\.yaml.*nested (deeper than {MAX_DEPTH}|too deeply)"):
        load_yaml(path)


def test_huge_numbers_and_cameras_are_range_errors(tmp_path):
    path = _write(tmp_path, "confusion:\n  chunk_frames: 1e20\n")
    with pytest.raises(ConfigError, match=r"confusion\.chunk_frames"):
        load_model(path, ConfusionConfig, section="confusion")
    path = _write(tmp_path, "episodes:\n  scenario:\n    camera: {width: 100000, height: 100000}\n", "e.yaml")
    with pytest.raises(ConfigError, match=r"e\.yaml: episodes\.scenario\.camera\.width"):
        load_model(path, EpisodesConfig, section="episodes")


def test_nan_threshold_is_refused(tmp_path):
    path = _write(tmp_path, "monitors:\n  contrast:\n    threshold: .nan\n")
    with pytest.raises(ConfigError, match=r"monitors\.contrast\.threshold"):
        load_model(path, MonitorsConfig, section="monitors")


def test_misspelled_section_is_an_error_with_a_suggestion(tmp_path):
    path = _write(tmp_path, "confusionn:\n  iou_threshold: 0.3\n")
    with pytest.raises(ConfigError, match=r"confusionn: unknown section; did you mean 'confusion'\?"):
        load_model(path, ConfusionConfig, section="confusion")
    with pytest.raises(ConfigError, match=r"confusionn.*unknown section; did you mean 'confusion'\?"):
        load_evaluate_config(path)
    path = _write(tmp_path, "whatever: 1\n", "w.yaml")
    with pytest.raises(ConfigError, match=r"w\.yaml: 'whatever': unknown section; known sections: .*confusion"):
        load_evaluate_config(path)


def test_quoted_values_in_errors_are_bounded(tmp_path):
    path = _write(tmp_path, "confusion:\n  iou_threshold: '" + "x" * 1_000_000 + "'\n")
    with pytest.raises(ConfigError) as info:
        load_model(path, ConfusionConfig, section="confusion")
    assert "confusion.iou_threshold" in str(info.value)
    assert len(str(info.value)) < 400


_yamlish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
        st.dictionaries(
            st.sampled_from(["evaluate", "confusion", "pcd", "bags", "verification", "bbsl", "returns", "x"]),
            _yamlish,
            max_size=3,
        ).map(lambda d: __import__("yaml").safe_dump(d)),
    )
)
def test_any_config_text_exits_0_or_2_naming_the_file(tmp_path, capsys, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    (tmp_path / "empty").mkdir(exist_ok=True)
    rc = main(["evaluate", "--config", str(path), "--out", str(tmp_path / "out"), str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert rc == 2
    assert str(path) in err or "no rosbag2 bag or JSON Lines dataset found" in err, err


@pytest.mark.parametrize("depth", [150, 3_000, 60_000])
def test_nesting_near_and_past_libyaml_limits_is_an_error_not_a_crash(tmp_path, depth):
    """libyaml (the fast parser) crashes the process on ~50 000 nested brackets: such texts go to the pure-Python
    parser; in a subprocess, so a crash fails this test instead of killing the suite."""
    path = _write(tmp_path, "x: " + "[" * depth + "1" + "]" * depth + "\n")
    code = (
        "import sys\nfrom perception_safety.io.config import ConfigError, load_yaml\n"
        f"try:\n    load_yaml({str(path)!r})\nexcept ConfigError as e:\n    print('ERR', e)\nelse:\n    print('OK')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    expect = "OK" if depth <= MAX_DEPTH else "ERR"
    assert out.stdout.startswith(expect), out.stdout
