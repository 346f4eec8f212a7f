"""`evaluate`: one bad bag never sinks the run, with one or two local jobs or on Ray (issue 19 item 6)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from perception_safety.cli import main
from perception_safety.io.bag import write_frames

from .conftest import scene_frames

CONFUSION_ONLY = """
evaluate:
  analyses: [confusion]
confusion:
  classes: {ped: [pedestrian], obs: [car]}
"""


@pytest.fixture(scope="module")
def good_and_truncated(tmp_path_factory):
    """``bags/trunc`` (an mcap cut after 3000 bytes: unreadable) and ``bags/good``, and a confusion-only config."""
    root = tmp_path_factory.mktemp("faulty")
    write_frames(root / "bags" / "trunc", scene_frames(40, 8))
    write_frames(root / "bags" / "good", scene_frames(40, 9))
    (mcap,) = (root / "bags" / "trunc").glob("*.mcap")
    with open(mcap, "r+b") as f:
        f.truncate(3000)
    config = root / "evaluate.yaml"
    config.write_text(CONFUSION_ONLY)
    return root, config


def same_bytes_but_the_date(a, b) -> bool:
    """results.json byte for byte, except what changes from run to run (``provenance.date_utc``, ``timings``,
    the run id)."""
    def strip(p):
        text = re.sub(rb'\n "timings": \{.*?\n \}', b"", p.read_bytes(), flags=re.S)
        return [line for line in text.splitlines() if b'"date_utc":' not in line and b'"run_id":' not in line]

    return strip(a) == strip(b)


def _evaluate(inputs, config, out, *flags) -> int:
    return main(["evaluate", *map(str, inputs), "--config", str(config), "--out", str(out), *flags])


@pytest.fixture(scope="module")
def bad_bag_local_one_job(good_and_truncated, tmp_path_factory):
    root, config = good_and_truncated
    out = tmp_path_factory.mktemp("bad1")
    assert _evaluate([root / "bags" / "trunc", root / "bags" / "good"], config, out) == 0
    return out / "results.json"


def _check_bad_bag_run(out, root) -> None:
    trunc, good = str(root / "bags" / "trunc"), str(root / "bags" / "good")
    res = json.loads((out / "results.json").read_text())
    assert res["frames"] == 40 and res["inputs"] == [trunc, good]
    assert res["data_quality"][good]["failed"] is None and res["data_quality"][good]["frames"] == 40
    assert "cannot open bag" in res["data_quality"][trunc]["failed"]
    (w,) = [w for w in res["warnings"] if w["code"] == "bag_failed"]
    assert trunc in w["message"] and "cannot open bag" in w["message"]
    assert "not evaluated: " + res["data_quality"][trunc]["failed"] in (out / "report.html").read_text()


def test_one_bad_bag_is_reported_and_the_rest_evaluated(good_and_truncated, bad_bag_local_one_job):
    """Issue 19 item 6: `evaluate bags/trunc bags/good` used to exit 2 without evaluating the good bag."""
    _check_bad_bag_run(bad_bag_local_one_job.parent, good_and_truncated[0])
    # issue 25 item 8: the heading says that a bag failed
    assert "40 frames from 1 of 2 bags; 1 unreadable" in (bad_bag_local_one_job.parent / "report.html").read_text()


def test_partly_failed_run_says_so_in_the_console_heading(good_and_truncated, tmp_path, capsys):
    root, config = good_and_truncated
    assert _evaluate([root / "bags" / "trunc", root / "bags" / "good"], config, tmp_path) == 0
    assert "40 frames from 1 of 2 bags; 1 unreadable" in capsys.readouterr().out


def test_one_bad_bag_with_two_jobs(good_and_truncated, bad_bag_local_one_job, tmp_path):
    root, config = good_and_truncated
    assert _evaluate([root / "bags" / "trunc", root / "bags" / "good"], config, tmp_path, "--jobs", "2") == 0
    _check_bad_bag_run(tmp_path, root)
    assert same_bytes_but_the_date(tmp_path / "results.json", bad_bag_local_one_job)


def test_exit_2_only_when_nothing_usable_remains(good_and_truncated, tmp_path, capsys):
    root, config = good_and_truncated
    assert _evaluate([root / "bags" / "trunc"], config, tmp_path) == 2
    err = capsys.readouterr().err
    assert "no usable frame in any input" in err and "trunc: not readable:" in err


def test_one_bad_bag_on_ray_joined_by_address(good_and_truncated, bad_bag_local_one_job, ray_cluster, tmp_path):
    """``--ray-address HOST:PORT``: a separate driver process joins the session's cluster and runs each bag as a
    Ray task; the bad bag is reported the same way and the results equal local ``--jobs 1`` byte for byte."""
    root, config = good_and_truncated
    cmd = [sys.executable, "-m", "perception_safety.cli", "evaluate", str(root / "bags" / "trunc"),
           str(root / "bags" / "good"), "--config", str(config), "--out", str(tmp_path), "--ray-address", ray_cluster]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_bad_bag_run(tmp_path, root)
    assert same_bytes_but_the_date(tmp_path / "results.json", bad_bag_local_one_job)
