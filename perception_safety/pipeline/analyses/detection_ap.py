"""Evaluate step: COCO-style AP, AP50 and AP75 per class, pooled and per distance bin, with episode-bootstrap
intervals (evaluation/detection_ap); ``results.json`` ``detection_ap`` -> class -> ``pooled`` / ``bins``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.evaluation.detection_ap.compute import ap_results
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import write_text


def ap_cell(cell: dict[str, Any], key: str) -> str:
    """``0.412 [0.350, 0.470]``, or the point alone without an interval, 'n/a' when undefined."""
    v = cell.get(key)
    if v is None:
        return "n/a"
    lo, hi = cell.get(f"{key}_lower"), cell.get(f"{key}_upper")
    return f"{v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    if red.detection_ap_centre is not None:  # 3D object lists: AP by centre distance
        from perception_safety.pipeline.analyses.detection_ap_centre import run_centre

        run_centre(ev, red, cfg, out, ap_cell)
        return
    rec = red.detection_ap
    if rec is None:
        return
    acfg = cfg.detection_ap
    table = ap_results(rec, acfg.n_boot, acfg.level, acfg.seed)
    settings = {
        "iou_thresholds": "0.50:0.05:0.95 (AP), 0.50 (AP50), 0.75 (AP75)",
        "recall_points": 101,
        "max_detections": acfg.max_detections,
        "bins_m": [list(r) for r in rec.ranges[1:]],
        "pooled_range_m": list(rec.ranges[0]),
        "interval": f"{100 * acfg.level:g} % percentile bootstrap over episodes, {acfg.n_boot} resamples, "
        f"seed {acfg.seed}",
        "episodes": len(rec.episodes),
        "false_detection_distance": (
            "the detection's own 3D position when the data carry one, else the flat-ground estimate from the box "
            "bottom (confusion.ground_camera)" if cfg.confusion.ground_camera is not None else
            "the detection's own 3D position when the data carry one; otherwise unknown (no confusion.ground_camera): "
            "such false detections count in the pooled AP only"
        ),
    }
    ev.results["detection_ap"] = table
    ev.results["detection_ap_settings"] = settings
    write_text(out / "detection_ap.json", json.dumps({"settings": settings, "classes": table}, indent=1) + "\n")
    sec = ev.report.section("Detection AP by distance (COCO-style)")
    sec.text(
        "AP = precision averaged over the 101 recall points 0, 0.01, ..., 1 (interpolated: the best precision at "
        "that recall or more) and over the IoU thresholds 0.50, 0.55, ..., 0.95; AP50 and AP75 at one threshold. "
        f"Per image and class the {acfg.max_detections} highest-scoring detections count; each detection takes the "
        "unmatched ground truth of highest IoU (greedy, highest score first). In a distance bin, ground truth "
        "outside the bin is ignored (a detection matched to it counts neither way) and an unmatched detection "
        "counts as a false positive only in the bin of its own estimated distance. Classes and bins are the "
        "confusion matrices'."
    )
    level = f"{100 * acfg.level:g} %"
    rows = []
    for name, entry in table.items():
        cells = [("pooled", entry["pooled"]), *entry["bins"].items()]
        for span, cell in cells:
            if not cell["ground_truth"] and not cell["detections"]:
                continue
            thin = "thin" if 0 < cell["ground_truth"] < acfg.min_ground_truth else ""
            rows.append([span, name, cell["ground_truth"], cell["detections"], cell["episodes"],
                         ap_cell(cell, "ap"), ap_cell(cell, "ap50"), ap_cell(cell, "ap75"), thin])  # fmt: skip
    sec.table(
        ["bin (m)", "class", "ground truth (n)", "detections at IoU 0.5 (n)", "episodes (n)",
         f"AP [{level} CI]", f"AP50 [{level} CI]", f"AP75 [{level} CI]", "flag"],
        rows,
        f"Intervals: {settings['interval']} (an episode's frames are resampled together). 'thin' = fewer than "
        f"{acfg.min_ground_truth} ground-truth objects (detection_ap.min_ground_truth).",
    )  # fmt: skip
    _warn(ev, table, acfg.min_ground_truth, len(rec.episodes))
    for name, entry in table.items():
        cell = entry["pooled"]
        if cell["ap"] is not None:
            lo, hi = cell["ap_lower"], cell["ap_upper"]
            ci = f"{level} CI [{lo:.3f}, {hi:.3f}], " if lo is not None else ""
            samples = f"{ci}n = {cell['ground_truth']} objects, {cell['episodes']} episodes"
            ev.report.summary.append(Metric(f"AP '{name}' (pooled)", cell["ap"], "", samples))


def _warn(ev: Evaluation, table: dict[str, Any], min_gt: int, episodes: int) -> None:
    for name, entry in table.items():
        n = entry["detections_without_distance"]
        if n:
            ev.warn(
                "detection_ap",
                f"'{name}': {n} false detection(s) (unmatched at IoU 0.5) have no distance estimate: they count in "
                "the pooled AP only, so the per-bin AP leaves them out (optimistic per bin).",
                "detections_without_distance",
            )
        if entry["pooled"]["ground_truth"] == 0 and entry["pooled"]["detections"]:
            ev.warn("detection_ap", f"'{name}': {entry['pooled']['detections']} detection(s) but no ground truth: "
                    "AP undefined (every detection of the class is a false positive)", "ap_undefined")  # fmt: skip
        for span, cell in entry["bins"].items():
            if cell["ground_truth"] == 0 and cell["detections"]:
                ev.warn("detection_ap", f"'{name}' {span} m: {cell['detections']} detection(s) but no ground truth: "
                        "AP undefined there", "ap_undefined")  # fmt: skip
            elif 0 < cell["ground_truth"] < min_gt:
                ev.warn("detection_ap", f"'{name}' {span} m: AP from {cell['ground_truth']} object(s) (< {min_gt}): "
                        "thin", "ap_thin")  # fmt: skip
    if episodes < 2:
        ev.warn("detection_ap", f"{episodes} episode(s): AP has no interval (the bootstrap resamples episodes)",
                "ap_no_interval")  # fmt: skip
