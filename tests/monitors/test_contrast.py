"""Contrast monitor: the statistic against a direct per-row np.var, alarms on fog / flat images."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_safety.core.types import Frame
from perception_safety.monitors.base import Level
from perception_safety.monitors.config import ContrastConfig, Region
from perception_safety.monitors.contrast import (
    ContrastMonitor,
    MonitorInputError,
    luma8,
    michelson_contrast,
    rms_contrast,
    row_variance_statistic,
)
from perception_safety.monitors.regions.resolve import RegionError


def _textured(h: int = 72, w: int = 128, seed: int = 0) -> np.ndarray:
    """A clean, strongly textured RGB image: random 8x8 blocks of dark and bright colours."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)
    return np.repeat(np.repeat(blocks, 8, axis=0), 8, axis=1)[:h, :w].copy()


def _reference_luma(img: np.ndarray) -> np.ndarray:
    f = img.astype(np.float64)
    return np.floor(0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2] + 0.5)


def test_row_variance_equals_direct_per_row_var() -> None:
    rng = np.random.default_rng(1)
    gray = rng.integers(0, 256, size=(37, 53), dtype=np.uint8)
    expected = float(np.mean([np.var(gray[r].astype(np.float64)) for r in range(gray.shape[0])]))
    assert row_variance_statistic(gray) == pytest.approx(expected, rel=1e-12)


def test_row_variance_ignores_variation_between_rows() -> None:
    # each row constant, rows different: per-row variance 0 although the global variance is large
    gray = np.repeat(np.arange(0, 250, 10, dtype=np.uint8)[:, None], 40, axis=1)
    assert row_variance_statistic(gray) == pytest.approx(0.0, abs=1e-9)


def test_luma_is_the_8bit_bt601_formula() -> None:
    img = _textured(64, 64, seed=3)
    got = luma8(img).astype(np.float64)
    ref = _reference_luma(img)
    assert got.dtype == np.float64 and got.shape == ref.shape
    assert np.max(np.abs(got - ref)) <= 1.0  # fixed-point rounding may differ by one level
    assert np.mean(got == ref) > 0.95


def test_monitor_statistic_matches_direct_computation_on_rgb() -> None:
    img = _textured(seed=5)
    res = ContrastMonitor().update(Frame(0, image=img))
    gray = luma8(img).astype(np.float64)
    assert res.values["statistic"] == pytest.approx(np.var(gray, axis=1).mean(), rel=1e-12)


def test_clean_textured_image_does_not_alarm() -> None:
    res = ContrastMonitor().update(Frame(0, image=_textured()))
    assert res.values["statistic"] > 1580
    assert not res.alarm and res.level == Level.OK


def test_fog_and_flat_images_alarm() -> None:
    img = _textured()
    fogged = (0.25 * img + 0.75 * 200).astype(np.uint8)  # heavy uniform haze: contrast scaled by 1/4
    flat = np.full_like(img, 128)
    mon = ContrastMonitor()
    r_fog = mon.update(Frame(0, image=fogged))
    r_flat = mon.update(Frame(1, image=flat))
    assert r_fog.alarm and r_fog.level == Level.ERROR and "below threshold" in r_fog.reasons[0]
    assert r_flat.alarm and r_flat.values["statistic"] == pytest.approx(0.0, abs=1e-9)


def test_roi_restricts_the_statistic() -> None:
    img = np.full((60, 100, 3), 90, dtype=np.uint8)
    img[30:60, 0:50] = _textured(30, 50)
    cfg = ContrastConfig(roi=Region.px(0, 30, 50, 30, image_size=(100, 60)))
    got = ContrastMonitor(cfg).update(Frame(0, image=img)).values["statistic"]
    gray = luma8(img[30:60, 0:50]).astype(np.float64)
    assert got == pytest.approx(np.var(gray, axis=1).mean(), rel=1e-12)
    outside = ContrastConfig(roi=Region.fraction(0.5, 0.0, 0.5, 0.5))
    assert ContrastMonitor(outside).update(Frame(0, image=img)).alarm


def test_alternative_statistics() -> None:
    img = _textured(seed=9)
    gray = luma8(img).astype(np.float64)
    assert rms_contrast(luma8(img)) == pytest.approx(np.std(gray) / 255.0, rel=1e-9)
    lo, hi = gray.min(), gray.max()
    assert michelson_contrast(luma8(img), (0.0, 100.0)) == pytest.approx((hi - lo) / (hi + lo))
    mon = ContrastMonitor(ContrastConfig(statistic="rms", threshold=0.9))
    assert mon.update(Frame(0, image=img)).alarm  # every real image has RMS contrast < 0.9
    assert ContrastConfig(statistic="rms").effective_threshold == pytest.approx(0.156)


def test_missing_image_is_stale_and_bad_images_are_errors() -> None:
    res = ContrastMonitor().update(Frame(0))
    assert res.level == Level.STALE and not res.alarm
    assert ContrastMonitor(ContrastConfig(alarm_on_missing_image=True)).update(Frame(0)).alarm
    with pytest.raises(MonitorInputError, match="uint8"):
        ContrastMonitor().update(Frame(0, image=np.zeros((4, 4, 3), dtype=np.float32)))
    h, w = _textured().shape[:2]
    with pytest.raises(RegionError, match=rf"contrast\.roi: px \(500, 0, 5, 5\) drawn for {w}x{h} does not intersect"):
        ContrastMonitor(ContrastConfig(roi=Region.px(500, 0, 5, 5, image_size=(w, h)))).update(
            Frame(0, image=_textured())
        )
    with pytest.raises(RegionError, match=r"drawn for 1280x720, but the camera in use gives a"):
        ContrastMonitor(ContrastConfig(roi=Region.px(0, 0, 5, 5, image_size=(1280, 720)))).update(
            Frame(0, image=_textured())
        )


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 40),
    w=st.integers(1, 60),
    seed=st.integers(0, 2**31 - 1),
    lo=st.integers(0, 255),
    span=st.integers(0, 255),
)
def test_row_variance_matches_np_var_for_any_shape_and_range(h: int, w: int, seed: int, lo: int, span: int) -> None:
    rng = np.random.default_rng(seed)
    gray = rng.integers(lo, min(255, lo + span) + 1, size=(h, w), dtype=np.uint8)
    expected = float(np.var(gray.astype(np.float64), axis=1).mean())
    assert row_variance_statistic(gray) == pytest.approx(expected, rel=1e-10, abs=1e-9)
    # a mono frame goes through the monitor unchanged
    assert ContrastMonitor().update(Frame(0, image=gray)).values["statistic"] == pytest.approx(expected, abs=1e-9)
