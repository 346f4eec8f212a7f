"""Breakdowns by condition: per-value numbers equal the analyses run on that value's frames alone."""

from __future__ import annotations

import json

import pytest

from perception_safety.cli import main
from perception_safety.core import EgoState, Frame
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.metrics import class_metrics
from perception_safety.io.bag import write_frames
from perception_safety.pipeline.breakdowns import speed_band
from perception_safety.pipeline.evaluate_config import load_evaluate_config

from .conftest import scene_frames

CONFIG = """
evaluate:
  analyses: [confusion, pcd]
  pcd_targets:
    - {name: pedestrian, class_id: pedestrian}
  breakdowns: [weather, ego_speed_band, level]
  speed_bands_mps: [0, 5, 10]
confusion:
  classes: {ped: [pedestrian], obs: [car]}
"""


def _with_speed(frames: list[Frame], speeds: list[float]) -> list[Frame]:
    pairs = zip(frames, speeds, strict=True)
    return [Frame(f.stamp_ns, f.detections, f.ground_truth, EgoState(speed=s)) for f, s in pairs]


def test_speed_band_edges():
    assert speed_band(4.99, [0, 5, 10]) == "[0, 5) m/s" and speed_band(5.0, [0, 5, 10]) == "[5, 10) m/s"
    assert speed_band(12.0, [0, 5, 10]) == ">= 10 m/s" and speed_band(None, [0, 5]) == "unknown"


def test_breakdowns_equal_direct_computation(tmp_path):
    clear = _with_speed(scene_frames(60, 11), [3.0] * 30 + [7.0] * 30)
    rain = _with_speed(scene_frames(60, 12), [7.0] * 60)
    write_frames(tmp_path / "bags" / "a", clear)
    write_frames(tmp_path / "bags" / "b", rain, custom_data={"perception_safety.weather": "rain"})
    (tmp_path / "bags" / "a" / "conditions.yaml").write_text("weather: clear\n")
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(CONFIG)
    out = tmp_path / "out"
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(cfg_path), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    bd = res["breakdowns"]
    cfg, _ = load_evaluate_config(cfg_path)

    def pooled_recall(frames):
        ms = class_metrics(confusion_from_frames(frames, cfg.confusion))
        return {m.label: m.recall for m in ms if m.bin == "pooled" and m.label != "empty"}

    assert list(bd["weather"]) == ["clear", "rain"]
    for value, frames in (("clear", clear), ("rain", rain)):
        got = {c: r["recall"] for c, r in bd["weather"][value]["recall"].items()}
        assert got == pytest.approx(pooled_recall(frames))
        assert bd["weather"][value]["frames"] == 60
    assert list(bd["ego_speed_band"]) == ["[0, 5) m/s", "[5, 10) m/s"]
    assert bd["ego_speed_band"]["[0, 5) m/s"]["frames"] == 30
    fast = {c: r["recall"] for c, r in bd["ego_speed_band"]["[5, 10) m/s"]["recall"].items()}
    assert fast == pytest.approx(pooled_recall(clear[30:] + rain))
    assert bd["ego_speed_band"]["[0, 5) m/s"]["pcd"]["pedestrian"]["n"] == sum(
        1 for f in clear[:30] for g in f.ground_truth if g.class_id == "pedestrian"
    )
    # an attribute nobody records is named, not silently one 'unknown' group
    assert list(bd["level"]) == ["unknown"]
    assert any(w["code"] == "breakdown_unknown" and "'level'" in w["message"] for w in res["warnings"])
    html = (out / "report.html").read_text()
    assert "Breakdown by weather" in html and "Recall vs distance per weather" in html


def test_object_size_band_counts_the_objects_of_each_height(tmp_path, capsys):
    """Small pedestrians (20 px) are always missed, tall ones (120 px) always found: recall 0 and 1 per band,
    computed independently of the breakdown code from the hand-built counts."""
    from perception_safety.core import Box, Detection, GroundTruthObject

    frames = []
    for i in range(40):
        small = GroundTruthObject(Box(100, 100, 110, 120), "pedestrian", 30.0, track_id="s")
        tall = GroundTruthObject(Box(300, 100, 350, 220), "pedestrian", 8.0, track_id="t")
        found = Detection(Box(301, 101, 350, 219), "pedestrian", 0.9)
        frames.append(Frame(10**9 + i * 10**8, (found,), (small, tall)))
    write_frames(tmp_path / "bags" / "a", frames)
    cfg_path = tmp_path / "c.yaml"
    text = CONFIG.replace("[weather, ego_speed_band, level]", "[object_size_band]")
    cfg_path.write_text(text.replace("  speed_bands_mps: [0, 5, 10]", "  size_bands_px: [0, 50, 100]"))
    out = tmp_path / "out"
    assert main(["evaluate", str(tmp_path / "bags"), "--config", str(cfg_path), "--out", str(out), "--timings"]) == 0
    res = json.loads((out / "results.json").read_text())
    bd = res["breakdowns"]["object_size_band"]
    # issue 27: per-step wall-clock seconds in results.json and, with --timings, on the console
    steps = {k: v for k, v in res["timings"].items() if k.endswith("_s") and k != "total_s"}
    assert {"read_and_map_s", "confusion_s", "pcd_s", "breakdowns_s", "report_s"} <= set(steps)
    assert all(v >= 0 for v in steps.values()) and sum(steps.values()) <= res["timings"]["total_s"]
    printed = capsys.readouterr().out
    assert "timings (wall clock):" in printed and "read_and_map" in printed and "breakdowns" in printed
    assert list(bd) == ["[0, 50) px", ">= 100 px"]  # no object is 50-100 px tall: that band is not listed
    assert bd["[0, 50) px"]["recall"]["ped"]["recall"] == 0.0
    assert bd[">= 100 px"]["recall"]["ped"]["recall"] == 1.0
    assert bd[">= 100 px"]["pcd"]["pedestrian"]["n"] == 40


def test_band_samples_are_a_selection_of_the_episode_samples():
    """The speed bands' PCD samples are selected from one extraction per episode (`FrameSamples`); they must equal
    extracting the band's frames alone: order (ties in distance included), groups and the input kind (candidates
    recorded on some frames only: mixed; on none: thresholded)."""
    import numpy as np

    from perception_safety.core import Detection
    from perception_safety.pipeline.breakdowns import FrameSamples, pcd_parts

    frames = scene_frames(80, 5)
    frames = [Frame(f.stamp_ns, f.detections, tuple(g if i % 7 else type(g).at_position(g.box, g.class_id,
              (10.0, 0.0, 0.0), g.track_id) for g in f.ground_truth), f.ego,  # equal distances: ties
              candidates=(Detection(f.ground_truth[0].box, "pedestrian", 0.2),) if i % 3 == 0 else None)
              for i, f in enumerate(frames)]  # fmt: skip
    cfg, _ = load_evaluate_config(None)
    cfg = cfg.model_copy(update={"evaluate": cfg.evaluate.model_copy(update={"pcd_targets": [
        *cfg.evaluate.pcd_targets, type(cfg.evaluate.pcd_targets[0])(name="car", class_id="car")]})})
    rng = np.random.default_rng(0)
    for mask in (np.ones(80, bool), rng.random(80) < 0.5, np.arange(80) % 3 == 0, np.arange(80) % 3 == 1,
                 np.zeros(80, bool)):  # fmt: skip
        chosen = [f for f, keep in zip(frames, mask, strict=True) if keep]
        want = pcd_parts(chosen, cfg, "bag")
        for t in cfg.evaluate.pcd_targets:
            assert FrameSamples.of(frames, t, cfg, "bag").for_frames(mask) == want[t.name]
    kinds = {pcd_parts([f for f, keep in zip(frames, m, strict=True) if keep], cfg, "bag")["pedestrian"]["input"]
             for m in (np.ones(80, bool), np.arange(80) % 3 == 0, np.arange(80) % 3 == 1)}
    assert kinds == {"mixed", "raw", "thresholded"}


def test_band_edges_must_rise(tmp_path):
    from perception_safety.io.config import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text("evaluate:\n  size_bands_px: [0, 50, 25]\n")
    with pytest.raises(ConfigError, match=r"size_bands_px.*strictly increasing"):
        load_evaluate_config(path)


def test_speed_bands_of_many_frames_name_each_frame_as_speed_band_does():
    """`speed_band_parts` bins all frames at once; its bands (in order of first appearance) and their frames must be
    those `speed_band` gives frame by frame (no speed, below the first edge, on an edge, beyond the last)."""
    import numpy as np

    cfg, _ = load_evaluate_config(None)
    cfg = cfg.model_copy(update={"evaluate": cfg.evaluate.model_copy(update={
        "analyses": ["confusion"], "speed_bands_mps": [2.0, 5.0, 10.0]})})
    rng = np.random.default_rng(1)
    speeds = [None if r < 0.1 else float(v) for r, v in zip(rng.random(200), rng.choice(
        [0.0, 1.9, 2.0, 4.99, 5.0, 7.5, 10.0, 33.0], 200), strict=True)]
    frames = [Frame(i, ego=None if v is None else EgoState(speed=v)) for i, v in enumerate(speeds)]
    from perception_safety.pipeline.breakdowns import speed_band_parts

    names = [speed_band(v, [2.0, 5.0, 10.0]) for v in speeds]
    parts = speed_band_parts(frames, None, cfg, "bag")
    assert list(parts) == list(dict.fromkeys(names))
    assert {band: p["frames"] for band, p in parts.items()} == {b: names.count(b) for b in names}
    assert "unknown" in parts and ">= 10 m/s" in parts and "[2, 5) m/s" in parts
