"""Evaluate step: distance-binned confusion matrices, their metrics, tables and heatmaps."""

from __future__ import annotations

from pathlib import Path

from perception_safety.evaluation.confusion.io import to_json_dict, write_csv, write_json
from perception_safety.evaluation.confusion.metrics import class_metrics, metrics_to_json
from perception_safety.pipeline.analyses.base import Evaluation, pct
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.confusion_plots import plot_bin, plot_grid

    dc = red.confusion
    assert dc is not None
    d = out / "confusion"
    d.mkdir(parents=True, exist_ok=True)
    metrics = class_metrics(dc)
    write_json(d / "confusion.json", dc, metrics=metrics_to_json(metrics), empty_column=cfg.confusion.empty_column)
    write_csv(d / "confusion.csv", dc, cfg.confusion.empty_column)
    ev.results["confusion"] = {**to_json_dict(dc, cfg.confusion.empty_column), "metrics": metrics_to_json(metrics)}
    sec = ev.report.section("Confusion matrices (distance-binned)")
    sec.text(
        "Class-labeled (one count per ground-truth object, Algorithm 2) and proposition-labeled (one count per "
        "frame and distance bin, Algorithm 1) matrices, cm[pred, true]: rows predicted, columns true, 'empty' last. "
        f"Bins are half-open [lo, hi) metres; matching at IoU >= {cfg.confusion.iou_threshold}"
        f"{' (class-aware)' if cfg.confusion.class_aware else ''}."
    )
    rep = dc.report
    if rep:
        sec.table(["counter", "value"], [[k, v] for k, v in rep.items() if not isinstance(v, dict | list)])
    rows = [
        [
            m.bin if m.bin == "pooled" else f"[{m.lo:g}, {m.hi:g})",
            m.label,
            m.ground_truth,
            m.true_positives,
            m.missed,
            pct(m.recall),
            pct(m.precision),
        ]
        for m in metrics
        if m.ground_truth > 0 and m.label != dc.empty_label
    ]
    sec.table(["bin (m)", "class", "ground truth (n)", "TP (n)", "missed (n)", "recall", "precision"], rows)
    sec.figure(plot_grid(dc, "class", d / "class_cm_grid.png").read_bytes(), "Class-labeled matrices, P(pred | true)")
    sec.figure(plot_grid(dc, "prop", d / "prop_cm_grid.png").read_bytes(), "Proposition-labeled matrices")
    plot_bin(dc, "class", None, d / "class_cm_pooled.png")
    ped = [m for m in metrics if m.bin == "pooled" and m.recall is not None]
    for m in ped:
        ev.report.summary.append(Metric(f"recall '{m.label}' (pooled)", m.recall, "", f"n = {m.ground_truth} objects"))
