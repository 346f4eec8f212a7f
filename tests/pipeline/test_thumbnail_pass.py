"""The report's thumbnails: their own timed step, each frame sought by the recording window the per-bag pass noted
(partials without it still get their pictures, with a warning), a broken image named."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest

from perception_safety.io.bag import write_frames
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.analyses.evidence import pictures
from perception_safety.pipeline.evaluate import reduce_partials
from perception_safety.pipeline.evaluate_config import load_evaluate_config
from perception_safety.pipeline.partials import read_partial
from perception_safety.report.html import Report

from .conftest import scene_frames

CONFIG = """
evaluate:
  analyses: [confusion]
  breakdowns: []
confusion:
  classes: {ped: [pedestrian], obs: [car]}
"""
BROKEN = 3
"""The frame of the first bag recorded with a corrupt JPEG."""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Two bags with camera images (one broken), evaluated with --timings: (out dir, results, console, config)."""
    from perception_safety.cli import main

    tmp = tmp_path_factory.mktemp("thumbs")
    image = np.broadcast_to(np.linspace(30, 220, 1280, dtype=np.uint8)[None, :, None], (720, 1280, 3))
    for k in range(2):
        frames = [replace(f, image=image) for f in scene_frames(30, 7 + k)]
        payloads = [b"\xff\xd8 broken" if k == 0 and i == BROKEN else None for i in range(len(frames))]
        write_frames(tmp / "bags" / f"run{k}", frames, compressed=payloads, jpeg_quality=80)
    (tmp / "evaluate.yaml").write_text(CONFIG)
    out = tmp / "out"
    assert main(["evaluate", str(tmp / "bags"), "--config", str(tmp / "evaluate.yaml"), "--out", str(out),
                 "--timings"]) == 0
    return out, json.loads((out / "results.json").read_text()), tmp


def test_thumbnails_are_a_timed_step_of_their_own(run):
    from perception_safety.pipeline.run import timings_lines

    _, results, _ = run
    assert results["timings"]["thumbnails_s"] >= 0 and results["timings"]["cpu"]["thumbnails_s"] >= 0
    steps = [k for k in results["timings"] if k.endswith("_s")]
    assert steps.index("thumbnails_s") < steps.index("evidence_s")
    assert any(line.startswith("thumbnails ") for line in timings_lines(results["timings"]))  # --timings


def test_partials_carry_each_references_window_and_results_json_does_not(run):
    out, results, _ = run
    assert "log_ns" not in (out / "results.json").read_text()  # results.json as before: the window is internal
    parts = _partials(out)
    refs = [r for p in parts for ep in p["episodes"] for c in ep["evidence"]["cells"].values() for r in c["refs"]]
    assert refs and all(len(r["log_ns"]) == 2 and r["log_ns"][0] <= r["log_ns"][1] for r in refs)
    assert not [w for w in results["warnings"] if w["code"] == "thumbnails_read_whole"]


def _pixels(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR).astype(int)


def _partials(out):
    """The map's partials as the reduce reads them (packed records unpacked)."""
    return [read_partial(p.read_text(), str(p)) for p in sorted((out / "partials").glob("*.json"))]


def _pictures(parts, cfg):
    ev = Evaluation({}, Report("t"))
    return ev, pictures(ev, reduce_partials(parts, cfg), cfg)


def test_partials_without_windows_get_the_same_pictures_by_reading_their_bags_with_a_warning(run):
    out, _, tmp = run
    cfg, _ = load_evaluate_config(tmp / "evaluate.yaml")
    parts = _partials(out)
    ev, sought = _pictures(parts, cfg)
    for p in parts:  # an older version's partials: references without their recording window
        for ep in p["episodes"]:
            for c in ep["evidence"]["cells"].values():
                for r in c["refs"]:
                    del r["log_ns"]
    old_ev, whole = _pictures(parts, cfg)
    thumbs = [t for _, ts in sought.strips for t in ts]
    assert thumbs and all(t.seeked for t in thumbs if t.jpeg is not None)
    assert not any(t.seeked for _, ts in whole.strips for t in ts)
    # the same pictures; where the object is near (a crop window at least twice the thumbnail) the sought frame's
    # JPEG is decoded at half size or less and drawn there: within JPEG noise of the full-size drawing
    olds = [t.jpeg for _, ts in whole.strips for t in ts]
    assert [t.jpeg is None for t in thumbs] == [j is None for j in olds]
    for t, j in zip(thumbs, olds, strict=True):
        if j is not None:
            a, b = _pixels(t.jpeg), _pixels(j)
            diff = np.abs(a - b)  # stated tolerance as in tests/report/test_thumbnails.py
            assert a.shape == b.shape and np.median(diff) <= 3 and diff.mean() < 16, t.alt
    assert any(t.jpeg == j for t, j in zip(thumbs, olds, strict=True))  # far objects: decoded in full, identical
    assert not ev.warnings
    assert [w["code"] for w in old_ev.warnings] == ["thumbnails_read_whole"]
    assert "read whole" in old_ev.warnings[0]["message"] and "run" in old_ev.warnings[0]["message"]


def test_a_broken_or_missing_image_is_named_where_its_picture_would_be(run):
    out, _, tmp = run
    cfg, _ = load_evaluate_config(tmp / "evaluate.yaml")
    parts = _partials(out)
    from perception_safety.io.bag import read_frames

    bag = str(tmp / "bags" / "run0")
    windows: dict[int, tuple[int, int]] = {}
    stamps = [f.stamp_ns for f in read_frames(bag, windows=windows, with_images=False)]
    ref = {"bag": bag, "topic": "/camera/image_raw/compressed", "stamp_ns": stamps[BROKEN], "episode": "run0",
           "t_s": 0.15, "kind": "missed", "label": "ped", "distance_m": 3.0, "box": [600, 400, 640, 480],
           "detail": "", "priority": -1e9, "log_ns": list(windows[stamps[BROKEN]])}
    gone = {**ref, "bag": str(tmp / "bags" / "nope")}
    parts[0]["episodes"][0]["evidence"]["cells"]["cm:empty:ped@0-10"] = {"count": 2, "refs": [ref, gone]}
    _, pics = _pictures(parts, cfg)
    strip = {t.ref["bag"]: t for t in dict(pics.strips)["cm:empty:ped@0-10"]}
    assert strip[bag].jpeg is None and strip[bag].missing == "the frame has no image"
    lost = strip[gone["bag"]]
    assert lost.jpeg is None and "nope" in lost.missing and "cannot open bag" in lost.missing
