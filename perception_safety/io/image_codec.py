"""JPEG/PNG encoding and decoding of camera frames (OpenCV), the one codec used by recorder, nodes and reader.

The recorder encodes each frame once; the monitors offline run on ``decode(encode(frame))``, which is what a
node receiving the recorded ``sensor_msgs/CompressedImage`` sees (same bytes, same decoder).
"""

from __future__ import annotations

import cv2
import numpy as np

from perception_safety.core.types import InvalidValueError


def encode_jpeg(image: np.ndarray, quality: int = 90) -> bytes:
    """An HxWx3 RGB or HxW mono uint8 image as JPEG bytes (``quality`` 1..100)."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] != 3):
        raise InvalidValueError(f"image: expected HxWx3 or HxW uint8, got {arr.dtype} {arr.shape}")
    if not 1 <= int(quality) <= 100:
        raise InvalidValueError(f"jpeg quality must be in 1..100, got {quality}")
    bgr = arr if arr.ndim == 2 else cv2.cvtColor(arr, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV fails only on invalid arrays, checked above
        raise InvalidValueError("image: JPEG encoding failed")
    return buf.tobytes()


def decode(payload: bytes | memoryview | np.ndarray) -> np.ndarray:
    """JPEG/PNG bytes to HxWx3 RGB (colour) or HxW (grey) uint8; corrupt or empty data raises `InvalidValueError`."""
    buf = np.frombuffer(payload, dtype=np.uint8) if not isinstance(payload, np.ndarray) else payload.astype(
        np.uint8, copy=False).reshape(-1)
    if buf.size == 0:
        raise InvalidValueError("compressed image: empty payload")
    try:
        img = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise InvalidValueError(f"compressed image: cannot decode ({exc})") from exc
    if img is None or img.size == 0:
        raise InvalidValueError(f"compressed image: cannot decode {buf.size} bytes (corrupt or not JPEG/PNG)")
    if img.dtype != np.uint8:
        raise InvalidValueError(f"compressed image: {img.dtype} pixels, expected 8-bit")
    if img.ndim == 2:
        return img
    if img.shape[2] == 4:
        return cv2.cvtColor(img, cv2.COLOR_BGRA2RGB)
    if img.shape[2] == 3:
        return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    raise InvalidValueError(f"compressed image: {img.shape[2]} channels, expected 1, 3 or 4")


def jpeg_roundtrip(image: np.ndarray, quality: int = 90) -> tuple[bytes, np.ndarray]:
    """The JPEG bytes of ``image`` and the image a receiver decodes from them."""
    payload = encode_jpeg(image, quality)
    return payload, decode(payload)


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def jpeg_size(payload: bytes | memoryview) -> tuple[int, int]:
    """``(width, height)`` from a JPEG's start-of-frame marker, without decoding (ITU-T T.81, B.2.2)."""
    data = bytes(payload[: min(len(payload), 1 << 16)]) if len(payload) > 1 << 16 else bytes(payload)
    if data[:2] != b"\xff\xd8":
        raise InvalidValueError("compressed image: not a JPEG (no SOI marker)")
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise InvalidValueError(f"compressed image: JPEG marker expected at byte {i}")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker in _SOF and i + 9 <= len(data):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    raise InvalidValueError("compressed image: JPEG without a frame header in its first 64 KB")
