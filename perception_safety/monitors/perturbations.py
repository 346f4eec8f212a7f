"""Image perturbations for evaluation runs (SG/RH/AC paper Section III-B-3, twelve perturbation types).

albumentations (the paper's ref. [34]) provides fog, sun flare, rain, coarse dropout, grid dropout,
channel shuffle, channel dropout, contrast, brightness and Gaussian noise; written here are what it
lacks: smoke (fast haze with a low-frequency density field) and the two camera faults of Secci &
Ceccarelli (the paper's ref. [33]), row-add logic and shifted pixels. Every perturbation has
intensity levels ``1..n`` (level 0 is the identity) and is a pure function of ``(image, seed)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import albumentations as A  # noqa: N812 (the library's own convention)
import cv2
import numpy as np

from perception_safety.monitors.contrast import MonitorInputError

# level -> parameter tables (index 0 is level 1)
_SMOKE_DENSITY = (0.2, 0.35, 0.5, 0.65, 0.8)
_FOG_COEF = (0.3, 0.5, 0.7, 0.9)
_FLARE_RADIUS = (0.1, 0.2, 0.3, 0.4, 0.5)  # fraction of the image width
_RAIN = ("drizzle", "heavy", "torrential")
_ROW_FRACTION = (0.02, 0.05, 0.1, 0.2, 0.4)
_SHIFT = ((0.02, 0.25), (0.05, 0.4), (0.1, 0.5), (0.2, 0.6), (0.3, 0.8))  # (shift / width, band / height)
_HOLES = (2, 5, 10, 20, 40)
_GRID_RATIO = (0.1, 0.2, 0.3, 0.4, 0.5)
_CHANNELS_DROPPED = (1, 2)
_CONTRAST = (-0.2, -0.4, -0.6, -0.8, -0.9)
_BRIGHTNESS = (0.2, 0.35, 0.5, 0.65, 0.8)
_NOISE_STD = (0.05, 0.1, 0.2, 0.3, 0.5)  # fraction of the 0..255 range


def _smoke(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    """Haze ``I' = I (1 - d m) + a d m`` with density ``d`` and a smooth random field ``m`` in [0.5, 1]."""
    h, w = image.shape[:2]
    d = _SMOKE_DENSITY[level - 1]
    coarse = rng.uniform(0.5, 1.0, size=(9, 16)).astype(np.float32)
    # smooth at 1/8 resolution (cubic), then a cheap linear upsampling to full size
    mid = cv2.resize(coarse, (max(16, w // 8), max(9, h // 8)), interpolation=cv2.INTER_CUBIC)
    m = cv2.resize(mid, (w, h), interpolation=cv2.INTER_LINEAR)
    np.clip(m, 0.5, 1.0, out=m)
    m *= np.float32(d)
    airlight = np.full_like(image, 215)
    return cv2.blendLinear(image, airlight, 1.0 - m, m)


def _row_add_logic(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    """Faulty row-address logic: a fraction of the rows read out another row (a fixed address offset)."""
    h = image.shape[0]
    n = max(1, round(_ROW_FRACTION[level - 1] * h))
    rows = rng.choice(h, size=n, replace=False)
    offset = int(rng.integers(1, max(2, h // 4)))
    out = image.copy()
    out[rows] = image[(rows + offset) % h]
    return out


def _shifted_pixels(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    """Shifted-pixel fault: a horizontal band of rows is displaced sideways (wrapping around)."""
    h, w = image.shape[:2]
    shift_frac, band_frac = _SHIFT[level - 1]
    shift = max(1, round(shift_frac * w))
    band = max(1, round(band_frac * h))
    top = int(rng.integers(0, h - band + 1))
    out = image.copy()
    out[top : top + band] = np.roll(image[top : top + band], shift, axis=1)
    return out


def _albu(factory: Callable[[int, tuple[int, int]], A.BasicTransform]) -> Callable[..., np.ndarray]:
    """Wrap an albumentations transform factory ``(level, (h, w)) -> transform`` as a seeded function."""
    cache: dict[tuple[int, tuple[int, int]], A.Compose] = {}

    def apply(image: np.ndarray, level: int, seed: int) -> np.ndarray:
        key = (level, image.shape[:2])
        comp = cache.get(key)
        if comp is None:
            comp = cache[key] = A.Compose([factory(level, image.shape[:2])])
        comp.set_random_seed(seed)
        return comp(image=image)["image"]

    return apply


def _own(fn: Callable[[np.ndarray, int, np.random.Generator], np.ndarray]) -> Callable[..., np.ndarray]:
    def apply(image: np.ndarray, level: int, seed: int) -> np.ndarray:
        return fn(image, level, np.random.default_rng(seed))

    return apply


@dataclass(frozen=True)
class PerturbationKind:
    """One perturbation type: number of levels, whether it changes from frame to frame, and its function."""

    name: str
    levels: int
    varies_per_frame: bool
    source: str
    apply: Callable[..., np.ndarray]


def _kinds() -> dict[str, PerturbationKind]:
    def k(name: str, levels: int, varies: bool, source: str, fn: Callable[..., np.ndarray]) -> PerturbationKind:
        return PerturbationKind(name, levels, varies, source, fn)

    return {
        "smoke": k("smoke", len(_SMOKE_DENSITY), True, "own", _own(_smoke)),
        "fog": k(
            "fog",
            len(_FOG_COEF),
            True,
            "albumentations.RandomFog",
            _albu(lambda lv, hw: A.RandomFog(fog_coef_range=(_FOG_COEF[lv - 1],) * 2, alpha_coef=0.08, p=1.0)),
        ),
        "sun_flare": k(
            "sun_flare",
            len(_FLARE_RADIUS),
            False,
            "albumentations.RandomSunFlare",
            _albu(lambda lv, hw: A.RandomSunFlare(src_radius=max(1, int(_FLARE_RADIUS[lv - 1] * hw[1])), p=1.0)),
        ),
        "rain": k(
            "rain",
            len(_RAIN),
            True,
            "albumentations.RandomRain",
            _albu(lambda lv, hw: A.RandomRain(rain_type=_RAIN[lv - 1], p=1.0)),
        ),
        "row_add_logic": k("row_add_logic", len(_ROW_FRACTION), False, "own", _own(_row_add_logic)),
        "shifted_pixels": k("shifted_pixels", len(_SHIFT), False, "own", _own(_shifted_pixels)),
        "coarse_dropout": k(
            "coarse_dropout",
            len(_HOLES),
            False,
            "albumentations.CoarseDropout",
            _albu(
                lambda lv, hw: A.CoarseDropout(
                    num_holes_range=(_HOLES[lv - 1],) * 2,
                    hole_height_range=(0.05, 0.1),
                    hole_width_range=(0.05, 0.1),
                    p=1.0,
                )
            ),
        ),
        "grid_dropout": k(
            "grid_dropout",
            len(_GRID_RATIO),
            False,
            "albumentations.GridDropout",
            _albu(lambda lv, hw: A.GridDropout(ratio=_GRID_RATIO[lv - 1], p=1.0)),
        ),
        "channel_shuffle": k(
            "channel_shuffle", 1, False, "albumentations.ChannelShuffle", _albu(lambda lv, hw: A.ChannelShuffle(p=1.0))
        ),
        "channel_dropout": k(
            "channel_dropout",
            len(_CHANNELS_DROPPED),
            False,
            "albumentations.ChannelDropout",
            _albu(lambda lv, hw: A.ChannelDropout(channel_drop_range=(_CHANNELS_DROPPED[lv - 1],) * 2, p=1.0)),
        ),
        "contrast": k(
            "contrast",
            len(_CONTRAST),
            False,
            "albumentations.RandomBrightnessContrast",
            _albu(
                lambda lv, hw: A.RandomBrightnessContrast(
                    brightness_limit=(0.0, 0.0), contrast_limit=(_CONTRAST[lv - 1],) * 2, p=1.0
                )
            ),
        ),
        "brightness": k(
            "brightness",
            len(_BRIGHTNESS),
            False,
            "albumentations.RandomBrightnessContrast",
            _albu(
                lambda lv, hw: A.RandomBrightnessContrast(
                    brightness_limit=(_BRIGHTNESS[lv - 1],) * 2, contrast_limit=(0.0, 0.0), p=1.0
                )
            ),
        ),
        "gaussian_noise": k(
            "gaussian_noise",
            len(_NOISE_STD),
            True,
            "albumentations.GaussNoise",
            _albu(lambda lv, hw: A.GaussNoise(std_range=(_NOISE_STD[lv - 1],) * 2, p=1.0)),
        ),
    }


PERTURBATIONS: dict[str, PerturbationKind] = _kinds()


def perturb(image: np.ndarray, name: str, level: int, seed: int = 0) -> np.ndarray:
    """Apply perturbation ``name`` at ``level`` (0 = unchanged copy) with ``seed``; the input is not modified."""
    kind = PERTURBATIONS.get(name)
    if kind is None:
        raise MonitorInputError(f"perturbation: unknown name {name!r} (known: {', '.join(PERTURBATIONS)})")
    if not 0 <= level <= kind.levels:
        raise MonitorInputError(f"perturbation {name}: level must be 0..{kind.levels}, got {level}")
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise MonitorInputError(f"perturbation {name}: image must be HxWx3 uint8, got {image.dtype} {image.shape}")
    if level == 0:
        return image.copy()
    out = kind.apply(image, level, int(seed))
    return np.ascontiguousarray(out, dtype=np.uint8)


def frame_seed(base_seed: int, t: int, name: str) -> int:
    """Per-frame seed: the base seed for static faults, a different one per frame for weather and noise."""
    kind = PERTURBATIONS[name]
    return int(base_seed) * 1_000_003 + int(t) if kind.varies_per_frame else int(base_seed)


def sweep() -> list[tuple[str, int]]:
    """Every ``(name, level)`` pair with level >= 1, in table order (the evaluation grid)."""
    return [(name, lv) for name, kind in PERTURBATIONS.items() for lv in range(1, kind.levels + 1)]


def describe() -> list[dict[str, Any]]:
    """Name, levels, per-frame variation and implementation of each perturbation (for docs and reports)."""
    return [
        {"name": k.name, "levels": k.levels, "varies_per_frame": k.varies_per_frame, "source": k.source}
        for k in PERTURBATIONS.values()
    ]
