"""JPEG codec of recordings: encode/decode with OpenCV, size from the frame header, corrupt payloads refused."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core.types import InvalidValueError
from perception_safety.io.image_codec import decode, encode_jpeg, jpeg_roundtrip, jpeg_size


def _smooth(h: int = 72, w: int = 128) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 2 % 256, y * 3 % 256, (x + y) % 256], axis=2).astype(np.uint8)


def test_roundtrip_keeps_size_and_colour_order_and_is_close() -> None:
    img = _smooth()
    img[:10, :10] = (255, 0, 0)  # a red patch must stay red (RGB in, RGB out)
    payload, seen = jpeg_roundtrip(img, 95)
    assert seen.shape == img.shape and seen.dtype == np.uint8
    assert seen[2:8, 2:8, 0].min() > 200 and seen[2:8, 2:8, 2].max() < 60
    assert np.abs(seen.astype(int) - img.astype(int)).mean() < 4.0
    np.testing.assert_array_equal(decode(payload), seen)  # decoding is deterministic: node == recorder


def test_mono_images_stay_mono() -> None:
    img = _smooth()[:, :, 0]
    assert decode(encode_jpeg(img)).shape == img.shape


@pytest.mark.parametrize("shape", [(72, 128, 3), (720, 1280, 3), (5, 7)])
def test_size_from_the_frame_header_without_decoding(shape) -> None:
    assert jpeg_size(encode_jpeg(np.zeros(shape, np.uint8))) == (shape[1], shape[0])


@pytest.mark.parametrize("payload", [b"", b"not a jpeg at all", "truncated"])
def test_corrupt_payloads_raise_a_clear_error(payload) -> None:
    if payload == "truncated":
        good = encode_jpeg(np.random.default_rng(0).integers(0, 256, (72, 128, 3), dtype=np.uint8))
        payload = good[: len(good) // 2]
    with pytest.raises(InvalidValueError, match="compressed image"):
        decode(payload)


def test_bad_quality_and_bad_arrays_are_refused() -> None:
    with pytest.raises(InvalidValueError, match="quality"):
        encode_jpeg(_smooth(), 0)
    with pytest.raises(InvalidValueError, match="uint8"):
        encode_jpeg(np.zeros((4, 4, 3), np.float32))
