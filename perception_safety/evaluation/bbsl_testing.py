"""Specification-based testing of object detection with BBSL (Definitions 11-13, Tables 3-4 of Tanaka et al.).

One test case per ground-truth object of a target class (Section 5.1). Its
expected value is ``f(GT)``: the set of cases that hold with the ground-truth box
as the subject (Definition 12). The SUT's view of the object is the detection
assigned to it (largest IoU, or one-to-one matching); the verdict is T when the
precondition holds for it and ``f(SUT) = f(GT)`` (Definition 13). An object with
no assigned detection fails the precondition (``subject_exists`` is false) and
is F, safety first, as the paper decides for its cells (7) and (8). Beside it,
the IoU_t baseline is T when the assigned detection has IoU >= t (Table 3), and
the breakdown by expectation x IoU verdict x BBSL verdict is Table 4.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.bbsl.config import BBSLConfig
from perception_safety.bbsl.spec import Spec
from perception_safety.core import Frame, iou_matrix, match_boxes
from perception_safety.core.iou import iou_pairs
from perception_safety.safe_io import atomic_open, write_text


@dataclass(frozen=True)
class TestCase:
    """One test case ``(td, f(GT(td)))`` and its verdicts."""

    __test__ = False  # not a pytest test class

    frame_id: str
    gt_index: int
    gt_box: tuple[float, ...]
    det_index: int
    det_box: tuple[float, ...] | None
    iou: float
    expected: tuple[str, ...]
    actual: tuple[str, ...] | None
    verdict: bool
    iou_verdicts: tuple[bool, ...]

    @property
    def expectation(self) -> str:
        return " + ".join(self.expected) if self.expected else "(no case)"


@dataclass(frozen=True)
class OracleReport:
    """All test cases of a run, with the Table 3 and Table 4 summaries."""

    spec: str
    case_names: tuple[str, ...]
    iou_thresholds: tuple[float, ...]
    breakdown_iou: float
    test_cases: tuple[TestCase, ...]
    frames: int
    out_of_scope: int = 0
    examples_per_cell: int = 5
    breakdown_verdicts: tuple[bool, ...] = field(default=(), repr=False)

    @property
    def passed(self) -> int:
        return sum(tc.verdict for tc in self.test_cases)

    def table3(self) -> dict[str, Any]:
        """T, F and T/(T+F) of the BBSL test and of each IoU_t baseline (Table 3)."""
        n = len(self.test_cases)

        def row(t: int) -> dict[str, Any]:
            return {"T": t, "F": n - t, "rate": (t / n) if n else None}

        out: dict[str, Any] = {"bbsl": row(self.passed)}
        for k, thr in enumerate(self.iou_thresholds):
            out[f"iou_{thr:g}"] = row(sum(tc.iou_verdicts[k] for tc in self.test_cases))
        return out

    def table4(self) -> dict[str, dict[str, Any]]:
        """Counts and example test cases per expectation x IoU verdict x BBSL verdict (Table 4)."""
        thr = f"{self.breakdown_iou:g}"
        cols = [(True, True), (False, True), (True, False), (False, False)]
        names = {c: f"IoU_{thr}:{'T' if c[0] else 'F'}, BBSL:{'T' if c[1] else 'F'}" for c in cols}
        rows: dict[str, dict[str, Any]] = {}
        for tc, iou_ok in zip(self.test_cases, self.breakdown_verdicts, strict=True):
            row = rows.setdefault(tc.expectation, {names[c]: {"count": 0, "examples": []} for c in cols})
            cell = row[names[(iou_ok, tc.verdict)]]
            cell["count"] += 1
            if len(cell["examples"]) < self.examples_per_cell:
                cell["examples"].append({"frame": tc.frame_id, "gt_index": tc.gt_index, "iou": round(tc.iou, 4)})
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "cases": list(self.case_names),
            "frames": self.frames,
            "test_cases": len(self.test_cases),
            "out_of_scope": self.out_of_scope,
            "table3": self.table3(),
            "table4": self.table4(),
            "convention": "one test case per ground-truth object of the target classes; "
            "a missing detection fails the precondition and is F",
        }


def _assign(det: np.ndarray, gt: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """For each ground-truth box: index of its assigned detection (-1: none) and the IoU."""
    idx = np.full(len(gt), -1, dtype=np.int64)
    ious = np.zeros(len(gt))
    if len(det) == 0 or len(gt) == 0:
        return idx, ious
    if mode == "one_to_one":
        m = match_boxes(det, gt, iou_threshold=0.0)
        idx[m.gt_indices] = m.det_indices
        ious[m.gt_indices] = m.ious
        return idx, ious
    ious_m = iou_matrix(det, gt)
    best = np.argmax(ious_m, axis=0)
    best_iou = ious_m[best, np.arange(len(gt))]
    hit = best_iou > 0.0
    idx[hit] = best[hit]
    ious[hit] = best_iou[hit]
    return idx, ious


def _max_iou_all(
    selected: list[tuple[Frame, list[int], list[int]]],
) -> tuple[list[dict[str, Any]], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """`_assign` ``max_iou`` of every frame at once: (frame, target ground truth, detection candidates) of each frame
    flattened, the IoU of every same-frame pair, each object's first detection of highest IoU (if above 0). Returns
    the test rows, the ground-truth boxes, the assigned detection boxes (zeros where none) and whether one exists."""
    gt_index = [i for _, gt_sel, _ in selected for i in gt_sel]
    det_index = [i for _, _, det_sel in selected for i in det_sel]
    gt_box = np.array([f.ground_truth[i].box.as_tuple() for f, gt_sel, _ in selected for i in gt_sel],
                      dtype=np.float64).reshape(-1, 4)
    det_box = np.array([f.detections[i].box.as_tuple() for f, _, det_sel in selected for i in det_sel],
                       dtype=np.float64).reshape(-1, 4)
    n_gt = np.array([len(g) for _, g, _ in selected], dtype=np.int64)
    n_det = np.array([len(d) for _, _, d in selected], dtype=np.int64)
    det_start = np.cumsum(n_det) - n_det
    gt_frame = np.repeat(np.arange(len(selected)), n_gt)
    per_gt = n_det[gt_frame]  # every detection of the object's frame, in order
    gt_of_pair = np.repeat(np.arange(len(gt_box)), per_gt)
    first = np.cumsum(per_gt) - per_gt
    det_of_pair = det_start[gt_frame][gt_of_pair] + np.arange(len(gt_of_pair)) - first[gt_of_pair]
    ious = iou_pairs(det_box[det_of_pair], gt_box[gt_of_pair])
    assigned = np.full(len(gt_box), -1, dtype=np.int64)
    best_iou = np.zeros(len(gt_box))
    has = np.flatnonzero(per_gt > 0)
    if len(has):
        best = np.maximum.reduceat(ious, first[has])
        at_best = np.flatnonzero(ious == np.repeat(best, per_gt[has]))
        _, pick = np.unique(gt_of_pair[at_best], return_index=True)  # the first detection at the maximum
        pair = at_best[pick]
        hit = best > 0.0
        assigned[has[hit]] = det_of_pair[pair[hit]]
        best_iou[has[hit]] = best[hit]
    exists = assigned >= 0
    sut = np.zeros((len(gt_box), 4))  # rows without a detection are ignored (subject_exists false)
    sut[exists] = det_box[assigned[exists]]
    frame_ids = [f.frame_id for f, _, _ in selected]
    rows = [{"frame": frame_ids[r], "gt": g, "det": det_index[a] if a >= 0 else -1, "iou": iou}
            for r, g, a, iou in zip(gt_frame.tolist(), gt_index, assigned.tolist(), best_iou.tolist(), strict=True)]
    return rows, [gt_box], [sut], [exists]


def run_oracle(spec: Spec, frames: Iterable[Frame], config: BBSLConfig | None = None) -> OracleReport:
    """Run the specification-based test of Definitions 12-13 over ``frames``."""
    cfg = config or BBSLConfig()
    targets = set(cfg.target_classes)
    det_classes = cfg.detection_class_set()
    thresholds = tuple(cfg.iou_thresholds)
    rows: list[dict[str, Any]] = []
    gt_boxes: list[np.ndarray] = []
    det_boxes: list[np.ndarray] = []
    det_exists: list[np.ndarray] = []
    per_frame_sets = bool(spec.compiled.set_names)
    gt_results: list[tuple[np.ndarray, np.ndarray]] = []
    sut_results: list[tuple[np.ndarray, np.ndarray]] = []
    n_frames = 0
    selected = []
    for frame in frames:
        n_frames += 1
        gt_sel = [i for i, g in enumerate(frame.ground_truth) if g.class_id in targets]
        if gt_sel:
            selected.append((frame, gt_sel, [i for i, d in enumerate(frame.detections) if d.class_id in det_classes]))
    if cfg.assignment == "max_iou" and not per_frame_sets:  # every frame's assignment at once
        rows, gt_boxes, det_boxes, det_exists = _max_iou_all(selected)
        selected = []
    for frame, gt_sel, det_sel in selected:
        gt = frame.ground_truth_boxes()[gt_sel]
        det_all = frame.detection_boxes()
        det = det_all[det_sel] if det_sel else np.zeros((0, 4))
        assigned, ious = _assign(det, gt, cfg.assignment)
        exists = assigned >= 0
        sut = np.zeros((len(gt), 4))  # rows without a detection are ignored (subject_exists false)
        sut[exists] = det[assigned[exists]]
        for k, gi in enumerate(gt_sel):
            di = det_sel[assigned[k]] if assigned[k] >= 0 else -1
            rows.append({"frame": frame.frame_id, "gt": gi, "det": di, "iou": float(ious[k])})
        if per_frame_sets:
            gt_sets = {name: frame.ground_truth_boxes() for name in spec.compiled.set_names}
            det_sets = {name: det_all for name in spec.compiled.set_names}
            gt_results.append(spec.evaluate_boxes(gt, True, gt_sets))
            sut_results.append(spec.evaluate_boxes(sut, exists, det_sets))
        gt_boxes.append(gt)
        det_boxes.append(sut)
        det_exists.append(exists)
    k = len(spec.case_names)
    all_gt = np.concatenate(gt_boxes) if gt_boxes else np.zeros((0, 4))
    all_det = np.concatenate(det_boxes) if det_boxes else np.zeros((0, 4))
    all_ex = np.concatenate(det_exists) if det_exists else np.zeros(0, bool)
    if per_frame_sets:
        gt_pre = np.concatenate([r[0] for r in gt_results]) if gt_results else np.zeros(0, bool)
        gt_cases = np.concatenate([r[1] for r in gt_results]) if gt_results else np.zeros((0, k), bool)
        sut_pre = np.concatenate([r[0] for r in sut_results]) if sut_results else np.zeros(0, bool)
        sut_cases = np.concatenate([r[1] for r in sut_results]) if sut_results else np.zeros((0, k), bool)
    else:
        gt_pre, gt_cases = spec.evaluate_boxes(all_gt, True)
        sut_pre, sut_cases = spec.evaluate_boxes(all_det, all_ex)
    names = spec.case_names
    cases: list[TestCase] = []
    verdict_iou: list[bool] = []
    out_of_scope = 0
    for n, row in enumerate(rows):
        if not gt_pre[n]:
            out_of_scope += 1  # the ground truth itself is outside dom(f): not a test case
            continue
        expected = tuple(c for c, hit in zip(names, gt_cases[n], strict=True) if hit)
        actual = tuple(c for c, hit in zip(names, sut_cases[n], strict=True) if hit) if sut_pre[n] else None
        det_box = tuple(float(v) for v in all_det[n]) if row["det"] >= 0 else None
        iou = row["iou"]
        cases.append(
            TestCase(
                frame_id=row["frame"],
                gt_index=row["gt"],
                gt_box=tuple(float(v) for v in all_gt[n]),
                det_index=row["det"],
                det_box=det_box,
                iou=iou,
                expected=expected,
                actual=actual,
                verdict=actual is not None and actual == expected,
                iou_verdicts=tuple(row["det"] >= 0 and iou >= t for t in thresholds),
            )
        )
        verdict_iou.append(row["det"] >= 0 and iou >= cfg.breakdown_iou)
    return OracleReport(
        spec=spec.source,
        case_names=names,
        iou_thresholds=thresholds,
        breakdown_iou=cfg.breakdown_iou,
        test_cases=tuple(cases),
        frames=n_frames,
        out_of_scope=out_of_scope,
        examples_per_cell=cfg.examples_per_cell,
        breakdown_verdicts=tuple(verdict_iou),
    )


def write_report(report: OracleReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``bbsl_test_summary.json`` and ``bbsl_test_cases.csv`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = out / "bbsl_test_summary.json"
    write_text(summary, json.dumps(report.to_dict(), indent=2) + "\n")
    table = out / "bbsl_test_cases.csv"
    with atomic_open(table, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["frame", "gt_index", "gt_box", "det_index", "det_box", "iou", "expected", "actual", "bbsl_verdict"]
            + [f"iou_{t:g}_verdict" for t in report.iou_thresholds]
        )
        for tc in report.test_cases:
            w.writerow(
                [
                    tc.frame_id,
                    tc.gt_index,
                    " ".join(f"{v:g}" for v in tc.gt_box),
                    tc.det_index,
                    "" if tc.det_box is None else " ".join(f"{v:g}" for v in tc.det_box),
                    f"{tc.iou:.6f}",
                    "|".join(tc.expected),
                    "(precondition fails)" if tc.actual is None else "|".join(tc.actual),
                    "T" if tc.verdict else "F",
                ]
                + ["T" if v else "F" for v in tc.iou_verdicts]
            )
    return summary, table


def format_report(report: OracleReport) -> str:
    """Plain-text Tables 3 and 4."""
    lines = [f"spec {report.spec}: {len(report.test_cases)} test cases from {report.frames} frames"]
    for name, row in report.table3().items():
        rate = "n/a" if row["rate"] is None else f"{100 * row['rate']:.1f}%"
        label = "BBSL test" if name == "bbsl" else name.replace("iou_", "IoU_")
        lines.append(f"  {label:<10} T/(T+F) = {row['T']}/({row['T']}+{row['F']}) = {rate}")
    t4 = report.table4()
    if t4:
        cols = list(next(iter(t4.values())))
        lines.append("  expectation".ljust(22) + "".join(c.ljust(24) for c in cols))
        for exp, row in t4.items():
            lines.append(f"  {exp:<20}" + "".join(str(row[c]["count"]).ljust(24) for c in cols))
    return "\n".join(lines)



@dataclass(frozen=True)
class BoxExtent:
    """Where the boxes of some frames reach: the largest x_max and y_max, and how many boxes leave the image."""

    max_x: float = 0.0
    max_y: float = 0.0
    outside: int = 0
    boxes: int = 0

    def merge(self, other: BoxExtent) -> BoxExtent:
        mx, my = max(self.max_x, other.max_x), max(self.max_y, other.max_y)
        return BoxExtent(mx, my, self.outside + other.outside, self.boxes + other.boxes)


def box_extent(frames: Iterable[Frame], size: tuple[float, float], slack: float = 2.0) -> BoxExtent:
    """The `BoxExtent` of all ground-truth and detection boxes against an image of ``size`` (w, h) pixels."""
    w, h = size
    corners = [(b.box.x_max, b.box.y_max) for f in frames for b in (*f.ground_truth, *f.detections)]
    if not corners:
        return BoxExtent()
    xy = np.array(corners, dtype=np.float64)
    out = int(((xy[:, 0] > w + slack) | (xy[:, 1] > h + slack)).sum())
    return BoxExtent(max(0.0, float(xy[:, 0].max())), max(0.0, float(xy[:, 1].max())), out, len(corners))


def image_size_mismatch(ext: BoxExtent, size: tuple[float, float], max_fraction: float = 0.05) -> str | None:
    """Why the spec's image size cannot be the boxes' image size (many boxes reach beyond it), or None.

    A few boxes of near objects may legitimately extend past the border; more than ``max_fraction`` cannot.
    """
    if ext.boxes == 0 or ext.outside / ext.boxes <= max_fraction:
        return None
    w, h = size
    return (
        f"{ext.outside} of {ext.boxes} boxes ({100 * ext.outside / ext.boxes:.0f} %) reach beyond the image size "
        f"{w:g}×{h:g} the spec is evaluated with (up to x = {ext.max_x:.0f} px, y = {ext.max_y:.0f} px): its regions "
        "(fractions of the image) land in the wrong place; give the camera's resolution (bbsl.image_size or "
        "--image-size W,H)"
    )
