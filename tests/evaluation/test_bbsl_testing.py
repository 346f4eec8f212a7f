"""Specification-based test oracle (Definitions 11-13): hand-worked scenes for S1, sD() = [275, 375]."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from perception_safety.bbsl import load_spec
from perception_safety.bbsl.config import BBSLConfig
from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.bbsl_testing import format_report, run_oracle, write_report

SPECS = Path(__file__).resolve().parents[2] / "config" / "specs"
S1 = load_spec(
    SPECS / "s1_stopping_distance.bbsl",
    {"vehicleExists": "subject_exists", "vehicle": "subject", "stoppingDistance": [275, 375]},
)


def frame(fid: str, gts, dets) -> Frame:
    return Frame(
        stamp_ns=0,
        frame_id=fid,
        ground_truth=tuple(GroundTruthObject(Box(*b), c, 10.0) for b, c in gts),
        detections=tuple(Detection(Box(*b), c, 0.9) for b, c in dets),
    )


# (frame, GT box, detection boxes, expected case, IoU worked by hand, BBSL verdict, Table 4 cell)
SCENES = [
    # y [300,360] overlaps the band; det shifted 5 px: inter 100*55, union 6500 -> 0.846
    ("f1", (100, 300, 200, 360), [((100, 305, 200, 365), "car")], "stop", 5500 / 6500, True, 2),
    # far car, det pulled down into the band: inter 100*20, union 18000 -> 0.111
    ("f2", (500, 100, 600, 200), [((500, 180, 600, 280), "car")], "NOT stop", 2000 / 18000, False, 7),
    # y [250,270] just above the band; det reaches 276: inter 1800, union 2600 -> 0.692
    ("f3", (300, 250, 400, 270), [((300, 252, 400, 276), "car")], "NOT stop", 1800 / 2600, False, 5),
    # near car, nothing detected: precondition fails for the SUT -> F
    ("f4", (700, 280, 900, 370), [], "stop", 0.0, False, 8),
    # far car, det half its size but still far: inter 5000, union 20000 -> 0.25; the
    # identical pedestrian detection is not a car and is ignored
    (
        "f5",
        (100, 100, 300, 200),
        [((150, 100, 250, 150), "car"), ((100, 100, 300, 200), "pedestrian")],
        "NOT stop",
        0.25,
        True,
        3,
    ),
    # near car seen only at its bottom: inter 2000, union 10000 -> 0.2, still overlaps the band
    ("f6", (100, 200, 200, 300), [((100, 280, 200, 300), "car")], "stop", 0.2, True, 4),
    # touches the band at y 280; det ends at 274.5, just above it: inter 1450, union 2400 -> 0.604
    ("f7", (400, 260, 500, 280), [((400, 256, 500, 274.5), "car")], "stop", 1450 / 2400, False, 6),
    ("f8", (600, 50, 700, 150), [((600, 50, 700, 150), "car")], "NOT stop", 1.0, True, 1),
]
CELL = {  # Table 4 numbering: row = expectation, column = IoU_0.6 x BBSL
    1: ("NOT stop", "IoU_0.6:T, BBSL:T"),
    3: ("NOT stop", "IoU_0.6:F, BBSL:T"),
    5: ("NOT stop", "IoU_0.6:T, BBSL:F"),
    7: ("NOT stop", "IoU_0.6:F, BBSL:F"),
    2: ("stop", "IoU_0.6:T, BBSL:T"),
    4: ("stop", "IoU_0.6:F, BBSL:T"),
    6: ("stop", "IoU_0.6:T, BBSL:F"),
    8: ("stop", "IoU_0.6:F, BBSL:F"),
}


def scene_frames():
    frames = [frame(fid, [(gt, "car")], dets) for fid, gt, dets, *_ in SCENES]
    frames.append(frame("f9", [((0, 0, 5, 5), "pedestrian")], []))  # no target object: no test case
    return frames


def test_verdicts_per_test_case() -> None:
    report = run_oracle(S1, scene_frames(), BBSLConfig())
    assert report.frames == 9 and len(report.test_cases) == len(SCENES)
    for tc, (fid, gt, _, expected, iou, verdict, _) in zip(report.test_cases, SCENES, strict=True):
        assert tc.frame_id == fid and tc.gt_box == tuple(float(v) for v in gt)
        assert tc.expected == (expected,), fid
        assert tc.iou == pytest.approx(iou), fid
        assert tc.verdict is verdict, fid
        assert tc.iou_verdicts == (iou >= 0.6, iou >= 0.8), fid
    f4 = report.test_cases[3]
    assert f4.det_index == -1 and f4.actual is None


def test_table3_and_table4() -> None:
    report = run_oracle(S1, scene_frames(), BBSLConfig())
    t3 = report.table3()
    assert t3["bbsl"] == {"T": 4, "F": 4, "rate": 0.5}
    assert t3["iou_0.6"] == {"T": 4, "F": 4, "rate": 0.5}  # f1, f3, f7, f8
    assert t3["iou_0.8"] == {"T": 2, "F": 6, "rate": 0.25}  # f1, f8
    t4 = report.table4()
    for k, (fid, *_rest, cell) in enumerate(SCENES):
        row, col = CELL[cell]
        assert t4[row][col]["count"] == 1, fid
        assert t4[row][col]["examples"] == [{"frame": fid, "gt_index": 0, "iou": round(SCENES[k][4], 4)}]
    assert sum(c["count"] for row in t4.values() for c in row.values()) == 8
    text = format_report(report)
    assert "BBSL test  T/(T+F) = 4/(4+4) = 50.0%" in text and "IoU_0.8" in text


def test_assignment_modes_for_an_occluded_object() -> None:
    # two far cars, the second hidden behind the first; one detection, on the first (the paper's cell (3)).
    f = frame("occ", [((100, 50, 200, 150), "car"), ((120, 60, 180, 120), "car")], [((100, 50, 200, 150), "car")])
    by_iou = run_oracle(S1, [f], BBSLConfig(assignment="max_iou")).test_cases
    assert [tc.det_index for tc in by_iou] == [0, 0]
    assert by_iou[1].iou == pytest.approx(3600 / 10000) and by_iou[1].verdict  # shares the front car's box
    one = run_oracle(S1, [f], BBSLConfig(assignment="one_to_one")).test_cases
    assert [tc.det_index for tc in one] == [0, -1]
    assert one[0].verdict and not one[1].verdict


def test_detection_classes_option() -> None:
    f = frame("f5", [((100, 100, 300, 200), "car")], [((100, 100, 300, 200), "pedestrian")])
    assert not run_oracle(S1, [f], BBSLConfig()).test_cases[0].iou_verdicts[0]
    cfg = BBSLConfig(detection_classes=["car", "pedestrian"])
    assert run_oracle(S1, [f], cfg).test_cases[0].iou_verdicts == (True, True)


def test_report_files(tmp_path: Path) -> None:
    report = run_oracle(S1, scene_frames(), BBSLConfig())
    summary, table = write_report(report, tmp_path / "out")
    data = json.loads(summary.read_text())
    assert data["test_cases"] == 8 and data["table3"]["bbsl"]["T"] == 4
    rows = list(csv.DictReader(table.open()))
    assert [r["bbsl_verdict"] for r in rows] == ["T" if s[5] else "F" for s in SCENES]
    assert rows[3]["actual"] == "(precondition fails)" and rows[3]["det_box"] == ""
    assert rows[1]["actual"] == "stop" and rows[1]["expected"] == "NOT stop"


def test_max_iou_assignment_of_all_frames_is_each_frames():
    """`run_oracle`'s max_iou assignment is computed for all frames at once (`_max_iou_all`); it must be `_assign`
    frame by frame: the first detection of highest IoU, none when no detection overlaps (ties, frames without
    detections, detections of other classes left out)."""
    import numpy as np

    from perception_safety.evaluation.bbsl_testing import _assign, _max_iou_all

    rng = np.random.default_rng(2)
    selected, want = [], []
    for i in range(300):
        grid = lambda: Box(*(rng.integers(0, 5, 2) * 20.0), *(rng.integers(5, 9, 2) * 20.0))  # noqa: E731
        gts = tuple(GroundTruthObject(grid(), str(rng.choice(["car", "person"])), 9.0)
                    for _ in range(rng.integers(0, 4)))
        dets = [Detection(grid(), str(rng.choice(["car", "person"])), 0.9) for _ in range(rng.integers(0, 4))]
        if dets and rng.random() < 0.3:
            dets.append(dets[0])  # a tie: the first one wins
        f = Frame(i, tuple(dets), gts, frame_id=f"f{i}")
        gt_sel = [k for k, g in enumerate(gts) if g.class_id == "car"]
        if not gt_sel:
            continue
        det_sel = [k for k, d in enumerate(dets) if d.class_id == "car"]
        selected.append((f, gt_sel, det_sel))
        det = f.detection_boxes()[det_sel] if det_sel else np.zeros((0, 4))
        assigned, ious = _assign(det, f.ground_truth_boxes()[gt_sel], "max_iou")
        want += [{"frame": f.frame_id, "gt": g, "det": det_sel[a] if a >= 0 else -1, "iou": float(v)}
                 for g, a, v in zip(gt_sel, assigned, ious, strict=True)]
    rows, gt_boxes, sut, exists = _max_iou_all(selected)
    assert rows == want
    assert sum(r["det"] >= 0 for r in rows) > 50 and sum(r["det"] < 0 for r in rows) > 20
    assert exists[0].tolist() == [r["det"] >= 0 for r in rows]
    assert [tuple(b) for b in gt_boxes[0]] == [f.ground_truth[g].box.as_tuple() for f, sel, _ in selected for g in sel]
    assert all(tuple(sut[0][n]) == selected_det(selected, r) for n, r in enumerate(rows) if r["det"] >= 0)
    assert _max_iou_all([])[0] == []


def selected_det(selected, row):
    f = next(f for f, _, _ in selected if f.frame_id == row["frame"])
    return f.detections[row["det"]].box.as_tuple()


def test_box_extent_of_all_boxes():
    from perception_safety.evaluation.bbsl_testing import BoxExtent, box_extent

    f1 = frame("a", [((10, 10, 1290, 50), "car")], [((5, 5, 100, 724), "car"), ((0, 0, 1281, 721), "car")])
    f2 = frame("b", [], [])
    f3 = frame("c", [((-50, -40, -10, -5), "car")], [])
    # x beyond 1280 + 2 or y beyond 720 + 2: the first (x 1290) and second (y 724) box; 1281/721 are within slack
    assert box_extent([f1, f2, f3], (1280, 720)) == BoxExtent(1290.0, 724.0, 2, 4)
    assert box_extent([f2], (1280, 720)) == BoxExtent() and box_extent([f3], (10, 10)) == BoxExtent(0.0, 0.0, 0, 1)
