"""Evaluate step: PCD and mPCD per target (score model, change points, bootstrap intervals, warnings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.evaluation.pcd.bootstrap import bootstrap_pcd
from perception_safety.evaluation.pcd.compute import PCDError, compute_pcd
from perception_safety.evaluation.pcd.samples import INPUT_MEANING
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import write_text


def _ci(values: tuple[float, float] | list[float] | None) -> str:
    return "-" if values is None else f"[{values[0]:.1f}, {values[1]:.1f}]"


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.pcd_plots import fits_figure, surfaces_figure

    d = out / "pcd"
    d.mkdir(parents=True, exist_ok=True)
    pc = cfg.pcd
    sec = ev.report.section("Perception Characteristics Distance (PCD, mPCD)")
    sec.text(
        f"Method '{pc.method}', model '{pc.model}' (auto: hurdle when more than {100 * pc.hurdle_zero_share:g} % "
        "of the scores are 0). y = IoU x confidence per target and frame against distance. Gaussian model (the "
        "paper's eq. 9): P-spline mean and per-segment sigma on all samples. Hurdle model: P(y > y_t | x) = "
        "p_det(x) P(y > y_t | detected, x), p_det a penalised logistic P-spline, the Gaussian part fitted to the "
        f"detected samples only. K = {pc.n_splines}, lambda = {pc.lam} ({pc.lam_selection}), variance change "
        f"points by the SIC test (alpha = {pc.alpha}), every split leaving at least {pc.side_minimum()} samples. "
        "PCD = largest distance with P(y > y_t) above p_t; mPCD = mean of the PCD grid over (y_t, p_t). "
        f"Intervals: {100 * pc.bootstrap.level:g} % percentile bootstrap, {pc.bootstrap.n_boot} resamples of whole "
        f"{pc.bootstrap.unit}s, seed {pc.bootstrap.seed}."
    )
    done = []
    out_json: dict[str, Any] = {}
    rows = []
    for name, (x, y, missed) in red.pcd_samples.items():
        kind = red.pcd_inputs.get(name, "")
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
            res = compute_pcd(x, y, pc, what=f"PCD target '{name}'")
            res = bootstrap_pcd(res, x, y, red.pcd_groups.get(name), pc, pc.bootstrap.unit)
        except PCDError as exc:
            out_json[name] = {"error": str(exc), "n": int(x.size)}
            sec.text(f"{name}: {exc}", "warn")
            ev.warn("pcd", f"PCD target '{name}': not computed: {exc}", "pcd_failed")
            ev.report.summary.append(Metric(f"PCD '{name}'", "not computed", "", f"n = {x.size} samples; see warnings"))
            continue
        out_json[name] = {
            **res.to_dict(),
            "missed": int(missed.sum()),
            "sample_input": kind,
            "sample_input_meaning": INPUT_MEANING.get(kind, ""),
        }
        for w in res.warnings:
            ev.warn("pcd", f"target '{name}': {w.message}", w.code)
        if kind == "thresholded":
            ev.warn(
                "pcd",
                f"target '{name}': samples from thresholded detections only (no sub-threshold candidates recorded); "
                "the paper's input is the un-thresholded top score",
                "pcd_thresholded_input",
            )
        done.append((name, res))
        iv = res.interval
        cps = ", ".join(f"{c:.1f}" for c in res.change_points.distances) or "none"
        segs = "; ".join(f"[{s.lo_m:.0f}, {s.hi_m:.0f}] m n={s.n}" for s in res.segments)
        rows.append(
            [
                name,
                res.x.size,
                int(missed.sum()),
                res.model,
                f"{res.pcd:.2f}",
                _ci(iv.pcd_ci if iv else None),
                f"{res.mpcd:.2f}",
                _ci(iv.mpcd_ci if iv else None),
                cps,
                segs,
            ]
        )
        unit = f"{iv.n_groups} {iv.unit}s" if iv else "no bootstrap"
        level = f"{100 * pc.bootstrap.level:g} %"
        ev.report.summary.append(
            Metric(
                f"PCD '{name}' (y_t={res.y_t}, p_t={res.p_t}, {res.model})",
                res.pcd,
                "m",
                f"{level} CI {_ci(iv.pcd_ci if iv else None)} m, n = {res.x.size} samples, {unit}",
            )
        )
        ev.report.summary.append(
            Metric(
                f"mPCD '{name}' ({res.model})",
                res.mpcd,
                "m",
                f"{level} CI {_ci(iv.mpcd_ci if iv else None)} m, n = {res.x.size} samples, {unit}",
            )
        )
        sec.text(f"{name}: input {kind or 'unknown'} ({INPUT_MEANING.get(kind, '')}); {res.model_choice}.")
    level = f"{100 * pc.bootstrap.level:g} % CI"
    sec.table(
        [
            "target",
            "samples (n)",
            "missed (n)",
            "model",
            "PCD (m)",
            f"PCD {level}",
            "mPCD (m)",
            f"mPCD {level}",
            "change points (m)",
            "segments (n)",
        ],
        rows,
    )
    if done:
        sec.figure(
            fits_figure(done, d / "pcd_fit.svg").read_text(encoding="utf-8"),
            "y vs distance: score model mean, ±σ band, change points, p_det (hurdle), PCD with its bootstrap interval",
        )
        surface = surfaces_figure(done, d / "pcd_surface.svg")
        sec.figure(surface.read_text(encoding="utf-8"), "PCD surface over (y_t, p_t)")
    write_text(d / "pcd.json", json.dumps(out_json, indent=1))
    ev.results["pcd"] = out_json
