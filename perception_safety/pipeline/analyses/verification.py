"""Evaluate step: the car-pedestrian DTMC per (true environment, variant), checked with Storm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import write_text


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.verification_plots import coinciding, plot_satisfaction
    from perception_safety.verification.sweep import SweepResult
    from perception_safety.verification.sweep import write_csv as write_sweep_csv
    from perception_safety.verification.sweep_each import sweep_each

    dc = red.confusion
    assert dc is not None
    d = out / "verification"
    d.mkdir(parents=True, exist_ok=True)
    vcfg = cfg.verification
    sec = ev.report.section("System-level verification (Markov chain, Storm)")
    swept, skipped = sweep_each(dc, vcfg, d, "evaluated matrices", red.episode_confusions)
    results, chains, specs, warnings = list(swept.results), list(swept.chains), swept.specs, swept.warnings
    for key, exc in skipped.items():
        env_name, variant = key.split("/", 1)
        sec.text(f"True environment '{env_name}', variant '{variant}' not checked: {exc}", "warn")
        ev.warn(
            "verification",
            f"true environment '{env_name}', variant '{variant}': not checked: {exc}",
            "verification_skipped",
        )
    for w in warnings:
        ev.warn("verification", w, "verification_bounds")
    # Wall-clock times vary run to run: they go to their own file so results.json is reproducible.
    timing_keys = ("build_seconds", "check_seconds", "bounds_seconds", "posterior_seconds")
    write_text(d / "timings.json", json.dumps(chains, indent=1))
    chains = [{k: v for k, v in c.items() if k not in timing_keys} for c in chains]
    from perception_safety.verification.sweep import bounds_description

    ev.results["verification"] = {"specs": specs, "bounds": bounds_description(vcfg), "results": results,
                                  "chains": chains, "skipped": skipped}
    if not results:
        sec.text("No true environment could be checked on these matrices.", "warn")
        ev.warn("verification", "not computed: no true environment could be checked on these matrices", "no_results")
        return
    sweep = SweepResult(tuple(results), tuple(chains), specs)
    write_sweep_csv(d / "verification.csv", sweep.results)
    sec.text(
        "The car–pedestrian DTMC is built from the matrices above (observation probabilities P(pred | true)) and "
        "checked with Storm; P(s0 ⊨ φ) per initial speed v0 and maximum speed V. Specs: "
        + "; ".join(f"{k} = {v}" for k, v in sweep.specs.items())
    )
    env = vcfg.plot.true_env
    spec = vcfg.plot.spec if vcfg.plot.spec in sweep.specs else next(iter(sweep.specs))
    geo, step_s = vcfg.geometry, vcfg.plot.step_s
    png = plot_satisfaction(
        sweep.results, d / "satisfaction.png", env, spec, vcfg.variants, vcfg.plot.log_scale, geo.cell_length_m, step_s
    )
    sec.figure(png.read_bytes(), f"P(φ) vs initial speed, true environment '{env}', spec '{spec}' (Fig. 8 style)")
    unit = (
        f"Speeds are in the model's cells per step: one cell is {geo.cell_length_m:g} m"
        + (
            f" and one step {step_s:g} s, so v0 = 1 is {geo.cell_length_m / step_s:g} m/s (top axis)."
            if step_s
            else "; the chain has no time step, so m/s needs verification.plot.step_s (seconds per step)."
        )
    )
    sec.text(unit, "note")
    overlaps = {v: same for v in vcfg.variants if (same := coinciding(sweep.results, v, env, spec))}
    if overlaps:
        groups = sorted({tuple(same) for same in overlaps.values()})
        vs = "; ".join("V = " + ", ".join(map(str, g)) for g in groups)
        sec.text(
            f"Overlapping lines: in panel(s) {', '.join(overlaps)} the lines of {vs} lie on top of each other (equal "
            "within 1e-9 at every shared v0), so only the last one drawn is visible: with this controller the "
            "probability depends on the initial speed v0, not on the maximum speed V. Each line has points only for "
            "v0 ≤ V.",
            "note",
        )
    worst: dict[str, dict[str, Any]] = {}
    for r in sweep.results:
        if r["true_env"] == env and r["spec"] == spec:
            w = worst.get(r["variant"])
            if w is None or r["probability"] < w["probability"]:
                worst[r["variant"]] = r
    post = any("posterior_lower" in w for w in worst.values())
    rows = [[v, w["probability"], _num(w.get("lower")), _num(w.get("upper")),
             *([_num(w.get("posterior_lower")), _num(w.get("posterior_upper"))] if post else []),
             w["max_speed"], w["initial_speed"]] for v, w in worst.items()]
    pc = vcfg.posterior
    sec.table(
        ["variant", f"worst P({spec})", "lower", "upper", *(["posterior lower", "posterior upper"] if post else []),
         "at V", "at v0"], rows,
        f"Worst case over all (V, v0), true environment '{env}'; lower/upper: interval chain (Clopper–Pearson per "
        f"confusion column at joint level {1 - vcfg.alpha:g}, Bonferroni; Storm IDTMC min/max)"
        + (f"; posterior: {pc.level:g} credible interval, Dirichlet(counts + {pc.prior:g}) per column, {pc.draws} "
           "whole-matrix draws" if post else ""),
    )
    for v, w in worst.items():
        ev.report.summary.append(
            Metric(
                f"worst P({spec} | {env}), {v}",
                w["probability"],
                "",
                f"over V ≤ {max(vcfg.max_speeds)}, {len(vcfg.max_speeds)} speeds"
                + ("" if w.get("lower") is None else f"; bounds [{w['lower']:.3g}, {w['upper']:.3g}]"),
            )
        )


def _num(v: float | None) -> float | str:
    return "n/a" if v is None else v
