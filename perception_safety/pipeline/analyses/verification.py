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
    swept, skipped = sweep_each(dc, vcfg, d, "evaluated matrices", red.episode_confusions, red.observation_runs)
    results, chains, specs, warnings = list(swept.results), list(swept.chains), swept.specs, swept.warnings
    for key, exc in skipped.items():
        env_name, variant = key.split("/", 1)
        sec.text(f"True environment '{env_name}', variant '{variant}' not checked: {exc}", "warn")
        ev.warn(
            "verification",
            f"true environment '{env_name}', variant '{variant}': not checked: {exc}",
            "verification_skipped",
        )
    from perception_safety.verification.memory_check import is_independence_warning

    for w in warnings:
        ev.warn("verification", w, "verification_independence" if is_independence_warning(w) else "verification_bounds")
    _untested(ev, red, cfg)
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
    svg = plot_satisfaction(
        sweep.results, d / "satisfaction.svg", env, spec, vcfg.variants, vcfg.plot.log_scale, geo.cell_length_m, step_s
    )
    sec.figure(svg.read_text(encoding="utf-8"),
               f"P(φ) vs initial speed, true environment '{env}', spec '{spec}' (Fig. 8 style)")
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
    _independence_section(ev, sweep, spec)
    _episode_section(sec, worst, spec)
    for v, w in worst.items():
        ev.report.summary.append(
            Metric(
                f"worst P({spec} | {env}), {v}",
                w["probability"],
                "",
                f"over V ≤ {max(vcfg.max_speeds)}, {len(vcfg.max_speeds)} speeds"
                + ("" if w.get("lower") is None else f"; bounds [{w['lower']:.3g}, {w['upper']:.3g}]")
                + _memory_note(w)
                + _episode_note(w),
            )
        )


def _episode_note(row: dict[str, Any]) -> str:
    """The mean over the per-episode chains at the same (V, v0), beside the pooled chain's figure."""
    if row.get("episode_mean") is None:
        return ""
    return (f"; per-episode chains: mean {row['episode_mean']:.3g} [{row['episode_lower']:.3g}, "
            f"{row['episode_upper']:.3g}] over {row['episode_chains']} episodes")


def _episode_section(sec: Any, worst: dict[str, dict[str, Any]], spec: str) -> None:
    """The per-episode chains' mean beside the pooled chain (issue 24 item 8), with what it means."""
    rows = [[v, w["probability"], w["episode_mean"], w["episode_lower"], w["episode_upper"], w["episode_chains"],
             w["max_speed"], w["initial_speed"]] for v, w in worst.items() if w.get("episode_mean") is not None]
    if not rows:
        return
    sec.text(
        "Per-episode chains: each episode's own confusion counts give its own chain (same model, same controller), "
        "checked like the pooled one; the mean of the episodes' P(φ) is the probability for an episode drawn like "
        "these, its interval has the episodes as the unit (Clopper–Pearson of the summed P(φ) over the episodes). The "
        "pooled chain instead draws every step's observation from the matrix summed over all episodes, as if a bad "
        "episode's misses were spread over every episode. Assumed: episodes independent and like the conditions "
        "the claim is about; within an episode the chain's own assumptions. An episode without a sample in a bin "
        "the chain decides in takes the pooled column there (warned with counts); one without any is left out.",
        "note")
    sec.table(["variant", f"pooled P({spec})", "mean over episodes", "lower", "upper", "episodes", "at V", "at v0"],
              rows, "At the pooled chain's worst (V, v0)")


def _memory_note(row: dict[str, Any]) -> str:
    """The memory chain's figure beside the memoryless one, or why P(phi) is inconclusive."""
    if row.get("independence") == "memory":
        lo, hi = row.get("memory_lower"), row.get("memory_upper")
        return (f"; misses come in runs: with observation memory {row['memory_probability']:.3g}"
                + ("" if lo is None else f" [{lo:.3g}, {hi:.3g}]"))
    return "; INCONCLUSIVE (independence of observations)" if row.get("independence") == "inconclusive" else ""


def _independence_section(ev: Evaluation, sweep: Any, spec: str) -> None:
    """The tests of consecutive observations per (variant, environment) and P(phi) with and without memory."""
    tests: dict[tuple[str, str, int], dict[str, Any]] = {}
    for c in sweep.chains:
        for t in c.get("independence_tests", ()):
            tests.setdefault((c["variant"], c["true_env"], t["bin"]), {**t, "status": c["independence"]})
    if not tests:
        return
    sec = ev.report.section("Independence of consecutive observations (the chain's assumption)")
    sec.text(
        "The chain draws a fresh, independent observation at every step. Per decision bin, P(miss | miss before) "
        "is compared with P(miss | hit before) over the pedestrian's consecutive frames, episodes as the unit "
        "(cluster-robust t test, C - 1 degrees of freedom). Where misses come in runs, P(phi) is also computed by "
        "the chain with one step of observation memory (state = car state and last observation, transition counts "
        "from the data); where the data cannot test it, P(phi) is INCONCLUSIVE.", "note")
    sec.table(
        ["variant", "true env", "bin", "P(miss)", "P(miss | miss before)", "P(miss | hit before)", "episodes",
         "pairs", "p-value", "verdict", "chain"],
        [[v, e, b, _num(t["p_miss"]), _num(t["p_miss_after_miss"]), _num(t["p_miss_after_hit"]), t["episodes"],
          t["pairs"], _num(t["p_value"]), t["verdict"], t["status"]] for (v, e, b), t in tests.items()],
        "Per (variant, true environment) and bin the chain decides in (at any max speed)",
    )
    worst: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sweep.results:
        if r["spec"] == spec and r.get("independence") in ("memory", "inconclusive"):
            worst.setdefault((r["variant"], r["true_env"]), []).append(r)
    if not worst:
        return
    rows = []
    for (v, e), rs in worst.items():
        plain = min(rs, key=lambda r: r["probability"])
        mem = [r for r in rs if r.get("memory_probability") is not None]
        m = min(mem, key=lambda r: r["memory_probability"]) if mem else None
        rows.append([v, e, plain["probability"], f"V = {plain['max_speed']}, v0 = {plain['initial_speed']}",
                     *([m["memory_probability"], _num(m.get("memory_lower")), _num(m.get("memory_upper")),
                        f"V = {m['max_speed']}, v0 = {m['initial_speed']}", _num(m.get("memory_clusters"))]
                       if m else ["n/a"] * 5),
                     "inconclusive" if any(r.get("status") == "inconclusive" for r in rs) else "ok"])
    sec.table(
        ["variant", "true env", f"worst P({spec}) memoryless", "at", "worst with memory", "lower", "upper", "at",
         "memory episodes", "status"],
        rows,
        f"Worst P({spec}) over (V, v0) of the memoryless chain beside the chain with one step of observation memory "
        "(n/a: no memory chain, P(phi) INCONCLUSIVE); status: inconclusive when any of its rows is",
    )


def _untested(ev: Evaluation, red: Reduced, cfg: EvaluateConfig) -> None:
    """Say so when the chain's independence could not be tested, and which frames the sequences left out."""
    ped = cfg.verification.pedestrian_label
    envs = cfg.verification.true_envs.values()
    if not red.observation_runs and any(ped in e.class_objects or ped in e.prop.split(",") for e in envs):
        ev.warn("verification", "the independence of consecutive observations was not tested (no per-frame "
                "pedestrian sequences in these inputs): P(phi) assumes it", "verification_independence")
    for column, n in sorted(red.ambiguous_frames.items()):
        if n:
            ev.warn("verification", f"{n} frame(s) hold several samples of the column '{column}': left out of the "
                    "independence test's sequences (which follows which is unknown)", "verification_independence")


def _num(v: float | None) -> float | str:
    return "n/a" if v is None else v
