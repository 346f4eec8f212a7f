"""``sample_unit: track_window``: hand counts, an independent per-frame reference, batch/merge invariance."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject, match_boxes
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, confusion_from_frames
from perception_safety.evaluation.confusion.config import ConfusionConfig

PED_OBS = {"ped": ["ped"], "obs": ["obs"]}
S = 1_000_000_000


def obj(x0: float, cls: str, distance: float, track: str) -> GroundTruthObject:
    return GroundTruthObject(Box(x0, 0, x0 + 10, 10), cls, distance, track_id=track)


def det(x0: float, cls: str) -> Detection:
    return Detection(Box(x0, 0, x0 + 10, 10), cls, 0.9)


def hand_frames() -> list[Frame]:
    """Track p (ped, 5 m): window 0 found, found, missed; window 1 found, missed. Track c (obs, 15 m): window 0."""
    p, c = obj(0, "ped", 5, "p"), obj(50, "obs", 15, "c")
    return [
        Frame(0, (det(0, "ped"), det(50, "obs")), (p, c)),
        Frame(S // 10, (det(0, "ped"), det(50, "obs")), (p, c)),
        Frame(2 * S // 10, (), (p,)),
        Frame(S, (det(0, "ped"),), (p,)),
        Frame(S + S // 10, (), (p,)),
    ]


CFG = ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10, 20], sample_unit="track_window", track_window_s=1.0)


def test_hand_counts_one_majority_sample_per_track_and_window() -> None:
    dc = confusion_from_frames(hand_frames(), CFG)
    # bin 0: track p window 0 -> ped (2 of 3); window 1 -> tie -> empty (a miss wins ties).
    assert dc.class_cm[0].tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 0]]
    # bin 1: track c -> obs; window 1 has no object in bin 1 in both frames -> one (empty, empty).
    assert dc.class_cm[1].tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert dc.class_cm_pooled.tolist() == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]
    # prop labels ped, obs, ped+obs, empty: (window, bin) majorities; window 1 bin 0 ties -> (empty, ped).
    assert dc.prop_cm[0].tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]
    assert dc.prop_cm[1].tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    assert dc.prop_cm_pooled.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]]
    assert dc.report["track_window_samples"] == 3 and dc.report["ground_truth_binned"] == 7
    frame_unit = confusion_from_frames(hand_frames(), CFG.model_copy(update={"sample_unit": "frame"}))
    assert frame_unit.class_cm[0, :, 0].tolist() == [3, 0, 2]  # the same frames counted per frame


def test_untracked_objects_are_one_sample_each() -> None:
    frames = [Frame(i, (det(0, "ped"),), (obj(0, "ped", 5, ""),)) for i in range(4)]
    dc = confusion_from_frames(frames, CFG)
    assert dc.class_cm[0, 0, 0] == 4 and dc.report["ground_truth_untracked"] == 4


def reference_class(frames: list[Frame], cfg: ConfusionConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame loop, written independently: match, bin, vote per (track, window, bin), majority (ties -> later)."""
    names = list(cfg.classes)
    e = len(names)
    votes: dict[tuple, Counter] = defaultdict(Counter)
    cells: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    window = int(cfg.track_window_s * 1e9)
    edges = cfg.bin_edges
    for f in frames:
        w = f.stamp_ns // window
        m = match_boxes(f.detection_boxes(), f.ground_truth_boxes(), cfg.iou_threshold)
        pred_of = dict(zip(m.gt_indices.tolist(), m.det_indices.tolist(), strict=True))
        occupied = set()
        for g_i, g in enumerate(f.ground_truth):
            k = next((i for i in range(len(edges) - 1) if edges[i] <= g.distance < edges[i + 1]), None)
            if k is None:
                continue
            occupied.add(k)
            pred = names.index(f.detections[pred_of[g_i]].class_id) if g_i in pred_of else e
            votes[(g.track_id, w, k, names.index(g.class_id))][pred] += 1
        for k in range(len(edges) - 1):
            cells[(w, k)][0] += k not in occupied
            cells[(w, k)][1] += 1
    cm = np.zeros((len(edges) - 1, e + 1, e + 1), dtype=int)
    for (_, _, k, true), c in votes.items():
        top = max(c.values())
        cm[k, max(p for p, n in c.items() if n == top), true] += 1
    for (_, k), (empty, total) in cells.items():
        cm[k, e, e] += 2 * empty >= total
    return cm


def random_frames(seed: int, n: int = 300) -> list[Frame]:
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        gts, dets = [], []
        for t in range(4):
            if rng.uniform() < 0.3:
                continue
            x = 40.0 * t
            cls = "ped" if t % 2 == 0 else "obs"
            gts.append(obj(x, cls, float(rng.uniform(0, 30)), f"t{t}"))
            if rng.uniform() < 0.6:
                dets.append(
                    det(x + rng.uniform(-2, 2), cls if rng.uniform() < 0.8 else ("obs" if cls == "ped" else "ped"))
                )
        frames.append(Frame(int(i * 0.07 * S), tuple(dets), tuple(gts)))
    return frames


@pytest.mark.parametrize("seed", [1, 2])
def test_class_matrices_equal_an_independent_per_frame_vote(seed: int) -> None:
    frames = random_frames(seed)
    cfg = ConfusionConfig(classes=PED_OBS, bin_edges=[0, 10, 20, 30], sample_unit="track_window", track_window_s=0.5)
    assert confusion_from_frames(frames, cfg).class_cm.tolist() == reference_class(frames, cfg).tolist()


def test_chunking_and_merging_do_not_change_the_votes() -> None:
    frames = random_frames(3)
    whole = confusion_from_frames(frames, CFG)
    small = confusion_from_frames(frames, CFG.model_copy(update={"chunk_frames": 7}))
    left = ConfusionAccumulator(CFG).add_frames(frames[:101])
    right = ConfusionAccumulator(CFG).add_frames(frames[101:])
    merged = left.merge(right).result()
    for dc in (small, merged):
        assert dc.class_cm.tolist() == whole.class_cm.tolist() and dc.prop_cm.tolist() == whole.prop_cm.tolist()
        assert dc.class_cm_pooled.tolist() == whole.class_cm_pooled.tolist()
    # fewer, never more samples than frames
    assert (
        whole.class_cm[:, :, :2].sum()
        < confusion_from_frames(frames, CFG.model_copy(update={"sample_unit": "frame"})).class_cm[:, :, :2].sum()
    )


def test_csv_batches_without_tracks_are_refused() -> None:
    from perception_safety.evaluation.confusion.batch import FrameBatch
    from perception_safety.evaluation.confusion.config import ClassMapper

    batch = FrameBatch.from_frames(hand_frames(), ClassMapper(CFG))
    batch = FrameBatch(**{**batch.__dict__, "gt_tracks": None})
    with pytest.raises(ValueError, match="track ids"):
        ConfusionAccumulator(CFG).add_batch(batch)


def test_confusion_command_scopes_tracks_per_input_and_refuses_csv(tmp_path, capsys) -> None:
    import json

    from perception_safety.cli import main
    from perception_safety.io.dataset import write_jsonl_frames

    # Two episodes reuse the track id 'p' and the same clock: they must stay two tracks.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl_frames(a, hand_frames())
    write_jsonl_frames(b, hand_frames())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "confusion:\n  classes: {ped: [ped], obs: [obs]}\n  bin_edges: [0, 10, 20]\n  sample_unit: track_window\n"
        "  track_window_s: 1.0\n  plots: false\n"
    )
    out = tmp_path / "out"
    assert main(["confusion", str(a), str(b), "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    doc = json.loads((out / "confusion.json").read_text())
    assert doc["class_cm"][0] == [[2, 0, 0], [0, 0, 0], [2, 0, 0]]  # twice the hand counts
    assert doc["report"]["track_window_samples"] == 6 and doc["config"]["sample_unit"] == "track_window"
    assert "sample_unit track_window (1 s): 6 class-labeled object samples" in capsys.readouterr().out
    csv_in = tmp_path / "d.csv"
    csv_in.write_text("frame,kind,x_min,y_min,x_max,y_max,class,score,distance\nf0,frame,,,,,,,\n")
    assert main(["confusion", str(csv_in), "--config", str(cfg), "--out", str(out)]) == 2
    assert "d.csv: sample_unit track_window needs track ids and stamps" in capsys.readouterr().err
