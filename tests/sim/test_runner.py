"""End-to-end sweeps on the builtin backend: SG + RH = hazard of f, byte-identical logs, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perception_safety.cli import main
from perception_safety.io.episode_log import read_episode_log
from perception_safety.sim.config import PerturbationSpec, load_episodes_config
from perception_safety.sim.sweep import EpisodeRunError, monitors_for, plan_episodes, run_sweep

from .conftest import write_tiny_config

SWEEP = [
    {"name": "brightness", "levels": [1, 5]},
    {"name": "smoke", "levels": [5]},
    {"name": "contrast", "levels": [3]},
    {"name": "coarse_dropout", "levels": [5]},
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sweep")
    cfg_path = write_tiny_config(root / "cfg", perturbations=SWEEP, include_clean=True)
    cfg = load_episodes_config(cfg_path)
    run_sweep(cfg, root / "out", monitors=monitors_for(cfg, cfg_path))
    return cfg_path, root / "out"


def _collided(ep) -> float:
    return -1.0 if any(s.collision for s in ep.steps) else 0.0


def test_small_sweep_sg_plus_rh_is_the_hazard_of_f(sweep: tuple[Path, Path]) -> None:
    _, out = sweep
    results = json.loads((out / "results.json").read_text())
    logs = sorted((out / "logs").glob("*.jsonl"))
    assert len(logs) == 6
    # independent E2 episode returns from the logs: S = -1 when the rollout collides
    s = {"perception": [], "monitored": [], "ground_truth": []}
    for log in logs:
        for ep in read_episode_log(log):
            s[ep.rollout].append(_collided(ep))
    n = len(logs)
    hazard = (sum(s["ground_truth"]) - sum(s["perception"])) / n
    e2 = results["metrics"]["overall"]["E2"]["episodes"]
    assert e2["SG"] + e2["RH"] == pytest.approx(hazard)
    assert e2["SG"] == pytest.approx((sum(s["monitored"]) - sum(s["perception"])) / n)
    # the heavy perturbations make f miss the pedestrian at least once; the ideal perception never collides
    assert hazard > 0.0
    assert sum(s["ground_truth"]) == 0.0
    for scheme in ("E1", "E2"):
        for form in ("frames", "episodes"):
            m = results["metrics"]["overall"][scheme][form]
            assert m["SG"] + m["RH"] == pytest.approx(m["hazard_f"])
    per = results["metrics"]
    assert set(per) == {"overall", "none", "brightness", "smoke", "contrast", "coarse_dropout"}
    assert per["brightness"]["episodes"] == 2


def test_clean_episode_rollouts_and_bags(sweep: tuple[Path, Path]) -> None:
    _, out = sweep
    eps = {ep.rollout: ep for ep in read_episode_log(out / "logs" / "000-crossing-none-0.jsonl")}
    assert set(eps) == {"perception", "monitored", "ground_truth"}
    gt = eps["ground_truth"]
    # f* brakes for the pedestrian and stops: the last step is stopped, no collision
    assert gt.end_reason == "stopped" and not gt.steps[-1].running
    assert not any(st.collision for st in gt.steps)
    assert [st.t for st in gt.steps] == list(range(len(gt.steps)))
    for ep in eps.values():
        assert all(st.frame is not None for st in ep.steps)
    from perception_safety.io.bag import read_frames

    frames = list(read_frames(out / "bags" / "000-crossing-none-0" / "ground_truth"))
    assert len(frames) == len(gt.steps)
    assert [f.stamp_ns for f in frames] == [st.frame.stamp_ns for st in gt.steps]
    # every frame the detector saw carries its image, in the camera's own pixel frame (320x180)
    assert all(f.image is not None and f.image.shape == (180, 320, 3) for f in frames)


def test_bag_images_reproduce_the_logged_monitor_results(sweep: tuple[Path, Path]) -> None:
    """The monitors re-run on the bag's decoded JPEGs give exactly the results the runner logged and recorded:
    the runner's monitors saw the same decoded bytes a node replaying the bag receives."""
    from rosbags.rosbag2 import Reader

    from perception_safety.io.bag import read_frames, read_monitor_results
    from perception_safety.monitors.composite import build_runtime_monitor, build_stop_rule
    from perception_safety.monitors.config import MonitorsConfig

    from .conftest import TINY_MONITORS

    _, out = sweep
    cfg = MonitorsConfig.model_validate(TINY_MONITORS["monitors"])
    bag = out / "bags" / "003-crossing-smoke-5" / "monitored"
    with Reader(bag) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
    assert types["/camera/image_raw/compressed"] == "sensor_msgs/msg/CompressedImage"
    assert types["/camera/camera_info"] == "sensor_msgs/msg/CameraInfo"
    recorded = read_monitor_results(bag)
    runtime, stop = build_runtime_monitor(cfg), build_stop_rule(cfg)
    frames = list(read_frames(bag))
    assert len(frames) == len(recorded) > 10
    alarms = 0
    for frame, (stamp, expected) in zip(frames, recorded, strict=True):
        comp = runtime.evaluate(frame)
        got = [*comp.parts, comp.combined, stop.update(frame)]
        assert frame.stamp_ns == stamp
        for g, e in zip(got, expected, strict=True):
            assert (g.name, g.alarm, g.level) == (e.name, e.alarm, e.level), stamp
            assert {k: float(v) for k, v in g.values.items()} == e.values, (stamp, g.name)
        alarms += comp.combined.alarm
    assert alarms > 0  # heavy smoke: the comparison covers alarms, not only quiet frames


def test_bags_carry_the_monitor_status_of_every_frame(sweep: tuple[Path, Path]) -> None:
    """Per frame: each monitor's status, the combined verdict (= the log's alarm) and the stop rule."""
    from perception_safety.io.bag import read_monitor_results

    _, out = sweep
    for name in ("000-crossing-none-0", "003-crossing-smoke-5"):
        eps = {ep.rollout: ep for ep in read_episode_log(out / "logs" / f"{name}.jsonl")}
        for rollout, ep in eps.items():
            status = read_monitor_results(out / "bags" / name / rollout)
            assert [s for s, _ in status] == [st.frame.stamp_ns for st in ep.steps]
            for (_, results), st in zip(status, ep.steps, strict=True):
                names = [r.name for r in results]
                assert names[:2] == ["contrast", "plausibility"] and names[-1] == "stop_region"
                combined = results[-2]
                assert combined.alarm == st.alarm
                assert combined.alarm == any(r.alarm for r in results[:-2])
    smoke = read_monitor_results(out / "bags" / "003-crossing-smoke-5" / "perception")
    assert any(r[0].alarm for _, r in smoke)  # heavy smoke: the contrast monitor alarms somewhere


def test_same_seed_gives_byte_identical_logs(sweep: tuple[Path, Path], tmp_path: Path) -> None:
    cfg_path, _ = sweep
    cfg = load_episodes_config(cfg_path)
    one = (PerturbationSpec(name="smoke", levels=(5,)),)
    cfg = cfg.model_copy(update={"perturbations": one, "include_clean": False})
    run_sweep(cfg, tmp_path / "a", monitors=monitors_for(cfg, cfg_path))
    run_sweep(cfg, tmp_path / "b", monitors=monitors_for(cfg, cfg_path))
    (log,) = sorted((tmp_path / "a" / "logs").glob("*.jsonl"))
    first = log.read_bytes()
    assert (tmp_path / "b" / "logs" / log.name).read_bytes() == first
    assert (tmp_path / "b" / "results.json").read_bytes() == (tmp_path / "a" / "results.json").read_bytes()
    # a different seed changes the detector noise, hence the log
    other = cfg.model_copy(update={"seed": cfg.seed + 1})
    run_sweep(other, tmp_path / "c", monitors=monitors_for(cfg, cfg_path))
    assert (tmp_path / "c" / "logs" / log.name).read_bytes() != first


def test_resume_after_killing_the_runner_equals_an_uninterrupted_run(sweep: tuple[Path, Path], tmp_path: Path) -> None:
    cfg_path, out = sweep
    target = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "perception_safety.cli",
        "episodes",
        "--config",
        str(cfg_path),
        "--out",
        str(target),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if len(list((target / "logs").glob("*.jsonl"))) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the runner finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done_before = len(list((target / "logs").glob("*.jsonl")))
    assert 2 <= done_before < 6
    assert not (target / "results.json").exists()
    # without --resume the folder is refused
    rc = main(["episodes", "--config", str(cfg_path), "--out", str(target), "--no-progress"])
    assert rc == 2
    rc = main(["episodes", "--config", str(cfg_path), "--out", str(target), "--resume", "--jobs", "2", "--no-progress"])
    assert rc == 0
    assert (target / "results.json").read_bytes() == (out / "results.json").read_bytes()
    for log in sorted((out / "logs").glob("*.jsonl")):
        assert (target / "logs" / log.name).read_bytes() == log.read_bytes()
    assert not list((target / "logs").glob(".*.tmp"))


def test_unknown_perturbation_is_a_clear_error(tmp_path: Path) -> None:
    cfg_path = write_tiny_config(tmp_path / "cfg", perturbations=[{"name": "hail", "levels": [1]}])
    with pytest.raises(EpisodeRunError, match=r"episodes\.perturbations\[0\]\.name: unknown perturbation 'hail'"):
        plan_episodes(load_episodes_config(cfg_path))
    cfg_path = write_tiny_config(tmp_path / "cfg2", perturbations=[{"name": "fog", "levels": [9]}])
    with pytest.raises(EpisodeRunError, match=r"levels: fog has levels 1\.\.4, got 9"):
        plan_episodes(load_episodes_config(cfg_path))


def test_resume_with_a_changed_config_is_refused(sweep: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    cfg_path, out = sweep
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    cfg = load_episodes_config(cfg_path)
    changed = cfg.model_copy(update={"seed": cfg.seed + 1})
    with pytest.raises(EpisodeRunError, match=r"different configuration \(changed: episodes\)"):
        run_sweep(changed, copy, resume=True, monitors=monitors_for(cfg, cfg_path))
    # the same configuration resumes (nothing left to run)
    report = run_sweep(cfg, copy, resume=True, monitors=monitors_for(cfg, cfg_path))
    assert report.ran == 0 and report.skipped == report.planned
