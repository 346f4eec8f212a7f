"""Perturbations: seeded reproducibility, level 0 identity, and what each one does to the image."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.monitors.config import PerturbationConfig
from perception_safety.monitors.contrast import MonitorInputError, luma8, row_variance_statistic
from perception_safety.monitors.perturbations import PERTURBATIONS, frame_seed, perturb, sweep


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    rng = np.random.default_rng(42)
    blocks = rng.integers(0, 256, size=(12, 20, 3), dtype=np.uint8)
    return np.repeat(np.repeat(blocks, 8, axis=0), 8, axis=1)  # 96 x 160, textured


def _contrast(img: np.ndarray) -> float:
    return row_variance_statistic(luma8(img))


def test_every_perturbation_is_reproducible_and_leaves_the_input_alone(image: np.ndarray) -> None:
    before = image.copy()
    for name, level in sweep():
        a = perturb(image, name, level, seed=7)
        b = perturb(image, name, level, seed=7)
        assert a.dtype == np.uint8 and a.shape == image.shape, name
        assert np.array_equal(a, b), f"{name} level {level} is not reproducible"
        assert not np.array_equal(a, image), f"{name} level {level} changed nothing"
    assert np.array_equal(image, before)


def test_random_perturbations_depend_on_the_seed(image: np.ndarray) -> None:
    for name in ("smoke", "rain", "row_add_logic", "shifted_pixels", "coarse_dropout", "gaussian_noise", "sun_flare"):
        assert not np.array_equal(perturb(image, name, 2, seed=1), perturb(image, name, 2, seed=2)), name


def test_level_zero_is_identity_and_bad_requests_are_errors(image: np.ndarray) -> None:
    out = perturb(image, "smoke", 0)
    assert np.array_equal(out, image) and out is not image
    with pytest.raises(MonitorInputError, match="unknown name 'snow'"):
        perturb(image, "snow", 1)
    with pytest.raises(MonitorInputError, match=r"level must be 0\.\.1"):
        perturb(image, "channel_shuffle", 2)
    with pytest.raises(MonitorInputError, match="HxWx3 uint8"):
        perturb(image[..., 0], "smoke", 1)
    assert PerturbationConfig(name="fog", level=2).level == 2


def test_row_add_logic_copies_other_rows(image: np.ndarray) -> None:
    out = perturb(image, "row_add_logic", 3, seed=5)  # 10 % of 96 rows -> 10 rows
    changed = np.flatnonzero(np.any(out != image, axis=(1, 2)))
    assert 1 <= changed.size <= 10
    for r in changed:
        assert any(np.array_equal(out[r], image[s]) for s in range(image.shape[0]) if s != r)


def test_shifted_pixels_rolls_a_band_sideways(image: np.ndarray) -> None:
    out = perturb(image, "shifted_pixels", 2, seed=3)  # shift 5 % of 160 = 8 px, band 40 % of 96 = 38 rows
    changed = np.flatnonzero(np.any(out != image, axis=(1, 2)))
    top, bottom = changed.min(), changed.max() + 1
    assert bottom - top <= 38
    assert np.array_equal(out[top:bottom], np.roll(image[top:bottom], 8, axis=1))


def test_photometric_perturbations_act_as_named(image: np.ndarray) -> None:
    base = _contrast(image)
    for name in ("smoke", "fog", "contrast"):
        levels = [_contrast(perturb(image, name, lv, seed=0)) for lv in range(1, PERTURBATIONS[name].levels + 1)]
        assert all(c < base for c in levels), name
    assert _contrast(perturb(image, "smoke", 5)) < _contrast(perturb(image, "smoke", 1))
    assert perturb(image, "brightness", 3).mean() > image.mean() + 20
    shuffled = perturb(image, "channel_shuffle", 1, seed=0)
    assert sorted(shuffled.reshape(-1, 3).sum(axis=0).tolist()) == sorted(image.reshape(-1, 3).sum(axis=0).tolist())
    dropped = perturb(image, "channel_dropout", 2, seed=0)
    assert sum(int(np.all(dropped[..., c] == 0)) for c in range(3)) == 2
    noisy = perturb(image, "gaussian_noise", 2, seed=0).astype(np.float64) - image
    assert 10 < noisy.std() < 30  # std 0.1 x 255 = 25.5 before clipping at 0 and 255
    grid = perturb(image, "grid_dropout", 5, seed=0)
    assert 0.15 < np.mean(np.all(grid == 0, axis=2)) < 0.4  # ratio 0.5 of each unit's side -> ~25 % of the area


def test_frame_seed_is_static_for_faults_and_varies_for_weather() -> None:
    assert frame_seed(3, 0, "row_add_logic") == frame_seed(3, 10, "row_add_logic") == 3
    assert frame_seed(3, 0, "rain") != frame_seed(3, 1, "rain")
    assert len(sweep()) == sum(k.levels for k in PERTURBATIONS.values()) == 55
