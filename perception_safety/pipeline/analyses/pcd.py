"""Evaluate step: PCD and mPCD per target, with fits and surfaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.evaluation.pcd.compute import PCDError, compute_pcd
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.pcd_plots import fits_figure, surfaces_figure

    d = out / "pcd"
    d.mkdir(parents=True, exist_ok=True)
    sec = ev.report.section("Perception Characteristics Distance (PCD, mPCD)")
    sec.text(
        f"Method '{cfg.pcd.method}': y = IoU x confidence of each target's match (0 when missed) against distance; "
        f"P-spline mean (K = {cfg.pcd.n_splines}, lambda = {cfg.pcd.lam}, {cfg.pcd.lam_selection}), variance change "
        f"points by the SIC test (alpha = {cfg.pcd.alpha}), PCD = largest distance with P(y > y_t) above p_t; "
        "mPCD = mean of the PCD grid over (y_t, p_t)."
    )
    done = []
    out_json: dict[str, Any] = {}
    rows = []
    for name, (x, y, missed) in red.pcd_samples.items():
        if x.size == 0:
            t = next((t for t in cfg.evaluate.pcd_targets if t.name == name), None)
            what = f"class_id {t.class_id!r}" if t and t.class_id else f"track_id {t.track_id!r}" if t else "its filter"
            why = f"no ground-truth object matches {what} in the inputs (labels are compared exactly, case-sensitively)"
            out_json[name] = {"error": why, "n": 0}
            sec.text(f"{name}: PCD not computed: {why}.", "warn")
            ev.warn("pcd", f"PCD target '{name}': not computed: {why}.", "pcd_empty_target")
            ev.report.summary.append(Metric(f"PCD '{name}'", "not computed", "", why))
            continue
        try:
            res = compute_pcd(x, y, cfg.pcd, what=f"PCD target '{name}'")
        except PCDError as exc:
            out_json[name] = {"error": str(exc), "n": int(x.size)}
            sec.text(f"{name}: {exc}", "warn")
            ev.warn("pcd", f"PCD target '{name}': not computed: {exc}", "pcd_failed")
            ev.report.summary.append(Metric(f"PCD '{name}'", "not computed", "", f"n = {x.size} samples; see warnings"))
            continue
        out_json[name] = {**res.to_dict(), "missed": int(missed.sum())}
        done.append((name, res))
        cps = ", ".join(f"{c:.1f}" for c in res.change_points.distances) or "none"
        rows.append([name, res.x.size, int(missed.sum()), f"{res.pcd:.2f}", f"{res.mpcd:.2f}", cps])
        ev.report.summary.append(Metric(f"mPCD '{name}'", res.mpcd, "m", f"n = {res.x.size} samples"))
        ev.report.summary.append(
            Metric(f"PCD '{name}' (y_t={res.y_t}, p_t={res.p_t})", res.pcd, "m", f"n = {res.x.size} samples")
        )
    sec.table(["target", "samples (n)", "missed (n)", "PCD (m)", "mPCD (m)", "change points (m)"], rows)
    if done:
        sec.figure(fits_figure(done, d / "pcd_fit.png").read_bytes(), "y vs distance: spline, ±σ band, change points")
        sec.figure(surfaces_figure(done, d / "pcd_surface.png").read_bytes(), "PCD surface over (y_t, p_t)")
    (d / "pcd.json").write_text(json.dumps(out_json, indent=1), encoding="utf-8")
    ev.results["pcd"] = out_json
