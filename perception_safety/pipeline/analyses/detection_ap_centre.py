"""Evaluate step for 3D object lists: nuScenes-style AP by centre distance per class, pooled and per distance bin
(evaluation/detection_ap/centre_distance.py), in ``results.json`` ``detection_ap`` in the COCO table's shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perception_safety.evaluation.detection_ap.centre_distance import NUSCENES_THRESHOLDS_M, centre_ap_results
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import write_text


def run_centre(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path,
               ap_cell: Callable[[dict[str, Any], str], str]) -> None:
    """The step (``ap_cell`` formats a cell as the COCO-style section does)."""
    gt, pred = red.detection_ap_centre
    acfg = cfg.detection_ap
    edges = list(cfg.confusion.bin_edges)
    table = centre_ap_results(gt, pred, edges, NUSCENES_THRESHOLDS_M, acfg.n_boot, acfg.level, acfg.seed)
    settings = {
        "method": "nuScenes-style: greedy by score to the closest unmatched ground truth of the sample and class, "
                  "a true positive when closer than the threshold (bird's-eye-view centre distance); 101 recall "
                  "points; AP = mean precision above 10 % recall less 10 %, normalised; the mean over the thresholds",
        "centre_distance_thresholds_m": list(NUSCENES_THRESHOLDS_M),
        "bins_m": [list(b) for b in cfg.confusion.bins],
        "interval": f"{100 * acfg.level:g} % percentile bootstrap over episodes, {acfg.n_boot} resamples, "
                    f"seed {acfg.seed}",
        "false_detection_distance": "the detection's own ground-plane distance (3D object lists carry it)",
    }
    ev.results["detection_ap"] = table
    ev.results["detection_ap_settings"] = settings
    write_text(out / "detection_ap.json", json.dumps({"settings": settings, "classes": table}, indent=1) + "\n")
    sec = ev.report.section("Detection AP by distance (nuScenes-style, centre distance)")
    sec.text(
        "3D object lists are matched by bird's-eye-view centre distance, not IoU: AP per class at 0.5, 1, 2 and 4 m "
        "(nuScenes), averaged over the four. In a distance bin, ground truth and detections are those whose own "
        "ground-plane distance lies in the bin (docs/objects3d.md)."
    )
    level = f"{100 * acfg.level:g} %"
    rows = []
    for name, entry in table.items():
        for span, cell in [("pooled", entry["pooled"]), *entry["bins"].items()]:
            if not cell["ground_truth"] and not cell["detections"]:
                continue
            by_t = " / ".join("-" if v is None else f"{v:.2f}" for v in cell["ap_by_threshold"].values())
            rows.append([span, name, cell["ground_truth"], cell["detections"], cell["episodes"],
                         ap_cell(cell, "ap"), by_t])
    sec.table(["bin (m)", "class", "ground truth (n)", "detections (n)", "episodes (n)", f"AP [{level} CI]",
               "AP at 0.5 / 1 / 2 / 4 m"], rows, f"Intervals: {settings['interval']}.")
    episodes = {str(e) for e in gt.episode} | {str(e) for e in pred.episode}
    if len(episodes) < 2:
        ev.warn("detection_ap", f"{len(episodes)} episode(s): AP has no interval (the bootstrap resamples episodes)",
                "ap_no_interval")
    for name, entry in table.items():
        cell = entry["pooled"]
        if cell["ap"] is None:
            if cell["detections"]:
                ev.warn("detection_ap", f"'{name}': {cell['detections']} detection(s) but no ground truth: AP "
                        "undefined", "ap_undefined")
            continue
        ci = f"{level} CI [{cell['ap_lower']:.3f}, {cell['ap_upper']:.3f}], " if cell["ap_lower"] is not None else ""
        ev.report.summary.append(Metric(f"AP '{name}' (pooled, centre distance)", cell["ap"], "",
                                        f"{ci}n = {cell['ground_truth']} objects, {cell['episodes']} episodes"))
