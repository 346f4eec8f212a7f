"""A thumbnail's frame decoded coarse: libjpeg's scaled decode, straight to RGB, in the stored pixel grid."""

from __future__ import annotations

import io
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from PIL import Image

from perception_safety.io.frame_seek import _coarse_jpeg
from perception_safety.io.image_codec import decode


def _rotated_jpeg() -> tuple[np.ndarray, bytes]:
    """A 320 x 240 colour JPEG whose EXIF says 'rotate 90' (orientation 6), as some cameras write."""
    rng = np.random.default_rng(3)
    img = cv2.resize(rng.integers(0, 256, (30, 40, 3), dtype=np.uint8), (320, 240), interpolation=cv2.INTER_CUBIC)
    pil = Image.fromarray(img)
    exif = pil.getexif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    pil.save(buf, "JPEG", quality=90, exif=exif)
    return img, buf.getvalue()


@pytest.mark.parametrize("factor", [1, 2, 4, 8])
def test_a_coarse_decode_is_pillows_scaled_decode_in_the_stored_pixel_grid(factor: int) -> None:
    img, data = _rotated_jpeg()
    assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).shape[:2] == (320, 240)  # OpenCV turns it
    asked: list = []
    got = _coarse_jpeg(SimpleNamespace(data=np.frombuffer(data, np.uint8)), 7,
                       lambda stamp, size: asked.append((stamp, size)) or factor + 0.9)
    assert asked == [(7, (320, 240))]
    pil = Image.open(io.BytesIO(data))
    pil.draft("RGB", (320 // factor, 240 // factor))  # an independent decoder's DCT-scaled decode, not rotated
    want = np.asarray(pil.convert("RGB"))
    assert got.shape == want.shape == (240 // factor, 320 // factor, 3)
    assert np.array_equal(got, want)
    if factor == 1:
        assert np.array_equal(got, decode(data))  # the full decode evaluate and the nodes use
        assert np.abs(got.astype(int) - img).mean() < 4  # and the picture it was made from


def test_a_grey_jpeg_comes_out_in_colour_and_a_png_is_left_to_the_full_decoder() -> None:
    grey = np.tile(np.arange(0, 256, 4, dtype=np.uint8), (48, 1))
    buf = cv2.imencode(".jpg", grey)[1]
    got = _coarse_jpeg(SimpleNamespace(data=buf.reshape(-1)), 0, lambda s, size: 2)
    assert got.shape == (24, 32, 3) and np.array_equal(got[..., 0], got[..., 2])
    png = cv2.imencode(".png", grey)[1]
    assert _coarse_jpeg(SimpleNamespace(data=png.reshape(-1)), 0, lambda s, size: 2) is None
