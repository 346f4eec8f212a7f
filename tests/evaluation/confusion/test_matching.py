"""The batch matching equals per-frame `core.match_boxes` on random batches, including the awkward boxes a columnar
batch can hold (NaN, infinite, inverted and empty boxes, exact duplicates = IoU ties, empty frames, coordinates far
from the origin), and the candidate IoU equals `core.iou.iou_pairs` bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core.iou import iou_pairs
from perception_safety.evaluation.confusion import matching
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.matching import candidate_pairs, frame_index, match_batch
from tests.evaluation.confusion.batches import per_frame, random_batch


@pytest.fixture(params=["bucket table", "binary search"])
def search_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of finding the windows: `frame_search` (large batches) and np.searchsorted (small ones)."""
    monkeypatch.setattr(matching, "_BUCKET_SEARCH_MIN", 0 if request.param == "bucket table" else 10**9)
    return request.param


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.9, 1.0])
def test_batch_matching_equals_per_frame_match_boxes(seed: int, thr: float, search_path: str) -> None:
    rng = np.random.default_rng(seed)
    batch = random_batch(rng, 60, offset=float(rng.choice([0.0, -250.0, 1e7])))
    for class_aware in (False, True):
        got, fallback = match_batch(batch, thr, class_aware)
        assert got.tolist() == per_frame(batch, thr, class_aware).tolist()
        assert 0 <= fallback <= batch.n_frames


def test_duplicates_tie_and_go_to_match_boxes() -> None:
    box = [10.0, 10.0, 30.0, 40.0]
    batch = FrameBatch(
        det_offsets=np.array([0, 2, 2, 3]),
        det_boxes=np.array([box, box, [np.nan, 0, 5, 5]]),
        det_classes=np.array([0, 1, 0]),
        gt_offsets=np.array([0, 1, 2, 3]),
        gt_boxes=np.array([box, box, [0.0, 0.0, 5.0, 5.0]]),
        gt_classes=np.array([0, 0, 0]),
        gt_distances=np.array([5.0, 5.0, 5.0]),
    )
    got, fallback = match_batch(batch, 0.5, False)
    assert got.tolist() == per_frame(batch, 0.5, False).tolist()
    assert got[1] == -1 and got[2] == -1  # frame 1 has no detection; frame 2's detection is NaN
    assert fallback == 1  # the tie of frame 0


@pytest.mark.parametrize("thr", [0.0, 0.5, 1.0])
def test_candidates_hold_every_admissible_pair_with_the_exact_iou(thr: float, search_path: str) -> None:
    rng = np.random.default_rng(11)
    batch = random_batch(rng, 80, odd=False)
    di, gi, iou = candidate_pairs(batch, thr)
    assert np.array_equal(iou, iou_pairs(batch.det_boxes[di], batch.gt_boxes[gi]))  # the same bits
    det_frame, gt_frame = frame_index(batch.det_offsets), frame_index(batch.gt_offsets)
    assert (det_frame[di] == gt_frame[gi]).all()
    found = set(zip(di.tolist(), gi.tolist(), strict=True))
    for f in range(batch.n_frames):  # every admissible pair of every frame, by brute force
        for d in range(batch.det_offsets[f], batch.det_offsets[f + 1]):
            for g in range(batch.gt_offsets[f], batch.gt_offsets[f + 1]):
                v = iou_pairs(batch.det_boxes[d : d + 1], batch.gt_boxes[g : g + 1])[0]
                if v >= thr and v > 0.0:
                    assert (d, g) in found


def test_frame_index_of_offsets() -> None:
    assert frame_index(np.array([0, 2, 2, 5])).tolist() == [0, 0, 2, 2, 2]
    assert frame_index(np.array([0])).tolist() == []
