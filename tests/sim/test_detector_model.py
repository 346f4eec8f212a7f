"""The simulated detector: recall by distance, degradation by image quality, correlated misses, ghosts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perception_safety.core.types import Box, GroundTruthObject
from perception_safety.sim.detector_model import (
    DetectorModel,
    DetectorModelConfig,
    DetectorModelError,
    RecallCurve,
    ground_truth_detections,
    image_quality,
)


def _textured(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(40, 216, size=(90, 160, 3), dtype=np.uint8)


def _ped(distance: float = 10.0, track: str = "pedestrian_0") -> GroundTruthObject:
    return GroundTruthObject(Box(40.0, 20.0, 60.0, 80.0), "pedestrian", distance, (distance, 0.0, 0.9), track)


def test_quality_is_one_unchanged_and_the_contrast_factor_under_affine_contrast_loss() -> None:
    img = _textured()
    assert image_quality(img, img) == pytest.approx(1.0)
    # halve the contrast around 128: NCC stays 1, the std ratio is 1/2 (up to 8-bit rounding)
    low = np.round(128.0 + 0.5 * (img.astype(np.float64) - 128.0)).astype(np.uint8)
    assert image_quality(img, low) == pytest.approx(0.5, abs=0.01)
    assert image_quality(img, np.full_like(img, 128)) == 0.0


def _rate(model: DetectorModel, clean: np.ndarray, perturbed: np.ndarray, n: int, distance: float = 10.0) -> float:
    g = (_ped(distance),)
    return float(np.mean([bool(model.detect(g, clean, perturbed, seed=11, t=t)) for t in range(n)]))


def test_detection_rate_follows_the_recall_curve_and_drops_with_quality() -> None:
    cfg = DetectorModelConfig(
        recall_curve=RecallCurve(distances=(0.0, 20.0), recall=(1.0, 0.6)),
        miss_correlation=0.0,
        ghost_rate=0.0,
        score_threshold=0.0,
        quality_gamma=1.0,
    )
    model = DetectorModel(cfg, focal_px=80.0, image_size=(160, 90))
    img = _textured()
    n = 3000
    # recall(10 m) = 0.8 by linear interpolation; binomial std sqrt(0.8 * 0.2 / 3000) = 0.007
    assert _rate(model, img, img, n) == pytest.approx(0.8, abs=0.03)
    low = np.round(128.0 + 0.5 * (img.astype(np.float64) - 128.0)).astype(np.uint8)
    # q = 0.5, gamma = 1: 0.8 * 0.5
    assert _rate(model, img, low, n) == pytest.approx(0.4, abs=0.03)


def test_misses_come_in_runs_with_correlation_but_keep_their_rate() -> None:
    img = _textured()
    runs = {}
    for rho in (0.0, 0.95):
        cfg = DetectorModelConfig(
            recall_curve=RecallCurve(distances=(0.0,), recall=(0.5,)),
            miss_correlation=rho,
            ghost_rate=0.0,
            score_threshold=0.0,
        )
        model = DetectorModel(cfg, focal_px=80.0, image_size=(160, 90))
        hits = np.array([bool(model.detect((_ped(),), img, img, seed=5, t=t)) for t in range(1000)])
        assert hits.mean() == pytest.approx(0.5, abs=0.12)
        changes = np.count_nonzero(hits[1:] != hits[:-1])
        runs[rho] = len(hits) / (changes + 1)
    assert runs[0.95] > 3 * runs[0.0]


def test_draws_depend_only_on_seed_frame_and_track() -> None:
    model = DetectorModel(DetectorModelConfig(ghost_rate=0.2), focal_px=80.0, image_size=(160, 90))
    img = _textured()
    a = [model.detect((_ped(),), img, img, seed=3, t=t) for t in range(30)]
    other = DetectorModel(DetectorModelConfig(ghost_rate=0.2), focal_px=80.0, image_size=(160, 90))
    b = [other.detect((_ped(),), img, img, seed=3, t=t) for t in reversed(range(30))][::-1]
    assert a == b
    c = [model.detect((_ped(),), img, img, seed=4, t=t) for t in range(30)]
    assert a != c


def test_ghost_count_is_poisson_with_the_configured_mean() -> None:
    cfg = DetectorModelConfig(ghost_rate=0.5, score_threshold=0.0)
    model = DetectorModel(cfg, focal_px=80.0, image_size=(160, 90))
    img = _textured()
    counts = [len(model.detect((), img, img, seed=2, t=t)) for t in range(2000)]
    assert np.mean(counts) == pytest.approx(0.5, abs=0.06)


def test_per_bin_recall_from_a_confusion_file(tmp_path: Path) -> None:
    # reference format, rows = predicted, cols = true; bin 0: 8 of 10 pedestrians detected, bin 1: 1 of 4
    data = {
        "orientation": "cm[bin][i][j] = count(predicted label i, true label j); rows=predicted, cols=true",
        "bin_edges_m": [[0, 10], [10, 20]],
        "class_labels": ["ped", "obs", "empty"],
        "prop_labels": ["ped", "obs", "ped,obs", "empty"],
        "class_cm": [[[8, 0, 0], [0, 5, 0], [2, 1, 3]], [[1, 0, 0], [0, 2, 0], [3, 2, 1]]],
        "prop_cm": [np.zeros((4, 4)).tolist(), np.zeros((4, 4)).tolist()],
    }
    path = tmp_path / "cm.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    model = DetectorModel(DetectorModelConfig(confusion_file=path))
    assert model.recall("pedestrian", 5.0) == pytest.approx(0.8)
    assert model.recall("pedestrian", 15.0) == pytest.approx(0.25)
    assert model.recall("pedestrian", 25.0) == 0.0  # beyond the last edge
    assert model.recall("car", 5.0) == pytest.approx(5 / 6)
    bad = DetectorModelConfig(confusion_file=path, confusion_labels={"pedestrian": "person"})
    with pytest.raises(DetectorModelError, match="person"):
        DetectorModel(bad)


def test_ground_truth_detections_are_perfect() -> None:
    g = (_ped(),)
    d = ground_truth_detections(g)
    assert d[0].box == g[0].box and d[0].score == 1.0 and d[0].class_id == "pedestrian"


def test_sub_threshold_candidates_leave_the_reported_detections_unchanged() -> None:
    base = dict(ghost_rate=0.0, miss_correlation=0.0, score_std=0.3, score_threshold=0.5)
    with_c = DetectorModel(DetectorModelConfig(**base), focal_px=80.0, image_size=(160, 90))
    without = DetectorModel(DetectorModelConfig(**base, candidates=False), focal_px=80.0, image_size=(160, 90))
    g = (_ped(40.0),)  # recall 0.7: misses and low scores both occur
    n_missed_box = n_low = n_none = 0
    for t in range(600):
        a = with_c.detect(g, None, None, seed=3, t=t)
        b = without.detect(g, None, None, seed=3, t=t)
        assert tuple(a) == tuple(b)  # the thresholded output is what it was
        assert b.candidates is None
        assert all(d.score < 0.5 for d in a.candidates)
        assert all(d.score >= 0.5 for d in a)
        if not a and len(a.candidates) == 1 and a.candidates[0].score >= with_c.config.candidate_score_min:
            n_missed_box += 1
        if not a and not a.candidates:
            n_none += 1
        n_low += sum(1 for d in a.candidates)
    # p = 0.7 detections; about 30 % missed of which candidate_rate = 0.8 still get a box
    assert n_missed_box > 0 and n_none > 0 and n_low >= n_missed_box
    assert n_none / (n_none + n_missed_box) < 0.5
