"""Seeking frames by stamp: only the wanted frames, with their own images (compressed and raw transport)."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame
from perception_safety.io.bag import BagTopics, write_frames
from perception_safety.io.frame_seek import frames_at, images_at


def _frames(n: int = 8) -> list[Frame]:
    out = []
    for k in range(n):
        img = np.full((48, 64, 3), 20 * k, np.uint8)  # each frame its own grey level
        out.append(Frame(10**9 + k * 50_000_000, (Detection(Box(k, 1, k + 10, 20), "pedestrian", 0.9),), image=img))
    return out


@pytest.mark.parametrize("quality", [None, 95])
def test_frames_at_returns_the_wanted_frames_with_their_images(tmp_path, quality):
    frames = _frames()
    write_frames(tmp_path / "bag", frames, jpeg_quality=quality)
    wanted = [frames[2].stamp_ns, frames[6].stamp_ns, 12345]  # the last one is not in the bag
    got = frames_at(tmp_path / "bag", wanted, BagTopics())
    assert sorted(got) == [frames[2].stamp_ns, frames[6].stamp_ns]
    for k in (2, 6):
        f = got[frames[k].stamp_ns]
        assert f.detections == frames[k].detections
        assert abs(float(f.image.mean()) - 20 * k) < 2.0  # its own image, not a neighbour's


def test_images_at_of_a_missing_topic_is_empty(tmp_path):
    write_frames(tmp_path / "bag", _frames(2))
    assert images_at(tmp_path / "bag", "/no/such/topic", [10**9]) == {}
