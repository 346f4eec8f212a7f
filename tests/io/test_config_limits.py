"""Issue 25 item 8: the config read itself is bounded (/dev/zero), and a key written twice is an error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perception_safety.io.config import MAX_CONFIG_BYTES, ConfigError, load_yaml


def _evaluate_dev_zero(out) -> subprocess.CompletedProcess[str]:
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from perception_safety.cli import main\n"
        f"sys.exit(main(['evaluate', '/nonexistent', '--config', '/dev/zero', '--out', '{out}']))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_config_dev_zero_is_an_error_not_a_memory_error(tmp_path):
    """Under a 1 GiB address-space limit the old unbounded read died with MemoryError; now: exit 2, named.
    The second run also reads the first one's (failed) results.json for its id: bounded, no 1 GiB buffer."""
    for _ in range(2):
        out = _evaluate_dev_zero(tmp_path / "o")
        assert out.returncode == 2, out.stderr[-2000:]
        assert f"/dev/zero: config is larger than {MAX_CONFIG_BYTES} bytes" in out.stderr
        assert "Traceback" not in out.stderr


def test_duplicate_key_names_file_line_and_first_occurrence(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("evaluate:\n  analyses: [confusion]\nconfusion:\n  iou_threshold: 0.5\n  iou_threshold: 0.7\n")
    expected = r"c\.yaml:5:3: invalid YAML: duplicate key 'iou_threshold' \(first at line 4\)"
    with pytest.raises(ConfigError, match=expected):
        load_yaml(path)
    path.write_text("a: 1\na: 1\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:2:1: invalid YAML: duplicate key 'a'"):
        load_yaml(path)


def test_merge_key_then_override_is_not_a_duplicate(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 5\n")
    assert load_yaml(path) == {"base": {"x": 1, "y": 2}, "d": {"x": 5, "y": 2}}
