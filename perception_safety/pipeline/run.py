"""The whole ``evaluate`` job: find bags, map/reduce, run each analysis, write results.json and report.html."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from perception_safety.evaluation.confusion.io import to_json_dict, write_csv, write_json
from perception_safety.evaluation.confusion.metrics import class_metrics, metrics_to_json
from perception_safety.evaluation.pcd.compute import PCDError, compute_pcd
from perception_safety.io.bag import find_bags
from perception_safety.pipeline.evaluate import NothingUsableError, Reduced, map_bags, reduce_partials
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric, Report

RESULTS_FORMAT = "perception_safety.results/1"


def progress_bar(console: Console) -> Progress:
    """The progress bar used for every long step (count, bar, elapsed, ETA)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


@dataclass
class Evaluation:
    """What the analyses produced: the JSON document and the report being built."""

    results: dict[str, Any]
    report: Report
    timings: dict[str, float] = field(default_factory=dict)


def _confusion(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
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
            _pct(m.recall),
            _pct(m.precision),
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


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} %"


def _pcd(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
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
            out_json[name] = {"error": "no samples of this target", "n": 0}
            sec.text(f"{name}: no samples of this target in the inputs.", "warn")
            continue
        try:
            res = compute_pcd(x, y, cfg.pcd, what=f"PCD target '{name}'")
        except PCDError as exc:
            out_json[name] = {"error": str(exc), "n": int(x.size)}
            sec.text(f"{name}: {exc}", "warn")
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


def _verification(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.verification_plots import plot_satisfaction
    from perception_safety.verification.errors import VerificationError
    from perception_safety.verification.sweep import SweepResult, run_sweep
    from perception_safety.verification.sweep import write_csv as write_sweep_csv

    dc = red.confusion
    assert dc is not None
    d = out / "verification"
    d.mkdir(parents=True, exist_ok=True)
    vcfg = cfg.verification
    sec = ev.report.section("System-level verification (Markov chain, Storm)")
    results: list[dict[str, Any]] = []
    chains: list[dict[str, Any]] = []
    specs: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for env_name, env in vcfg.true_envs.items():
        for variant in vcfg.variants:
            one_cfg = vcfg.model_copy(update={"true_envs": {env_name: env}, "variants": [variant]})
            try:
                one = run_sweep(dc, one_cfg, d, "evaluated matrices")
            except VerificationError as exc:
                skipped[f"{env_name}/{variant}"] = str(exc)
                sec.text(f"True environment '{env_name}', variant '{variant}' not checked: {exc}", "warn")
                continue
            results += one.results
            chains += one.chains
            specs = one.specs
    # Wall-clock times vary run to run: they go to their own file so results.json is reproducible.
    timing_keys = ("build_seconds", "check_seconds")
    (d / "timings.json").write_text(json.dumps(chains, indent=1), encoding="utf-8")
    chains = [{k: v for k, v in c.items() if k not in timing_keys} for c in chains]
    ev.results["verification"] = {"specs": specs, "results": results, "chains": chains, "skipped": skipped}
    if not results:
        sec.text("No true environment could be checked on these matrices.", "warn")
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
    sec.figure(
        plot_satisfaction(sweep.results, d / "satisfaction.png", env, spec, vcfg.variants).read_bytes(),
        f"P(φ) vs initial speed, true environment '{env}', spec '{spec}' (Fig. 8 style)",
    )
    worst: dict[str, dict[str, Any]] = {}
    for r in sweep.results:
        if r["true_env"] == env and r["spec"] == spec:
            w = worst.get(r["variant"])
            if w is None or r["probability"] < w["probability"]:
                worst[r["variant"]] = r
    rows = [[v, w["probability"], w["max_speed"], w["initial_speed"]] for v, w in worst.items()]
    sec.table(
        ["variant", f"worst P({spec})", "at V", "at v0"], rows, f"Worst case over all (V, v0), true environment '{env}'"
    )
    for v, w in worst.items():
        ev.report.summary.append(
            Metric(
                f"worst P({spec} | {env}), {v}",
                w["probability"],
                "",
                f"over V ≤ {max(vcfg.max_speeds)}, {len(vcfg.max_speeds)} speeds",
            )
        )


def _bbsl(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.evaluation.bbsl_testing import write_report

    d = out / "bbsl"
    sec = ev.report.section("BBSL specification-based testing")
    sec.text(
        "One test case per ground-truth object of the target classes "
        f"({', '.join(cfg.bbsl.target_classes)}); expected = the cases its ground-truth box satisfies, verdict T "
        "when the assigned detection satisfies the precondition and exactly the same cases (Definitions 11-13). "
        "A missed object fails the precondition and is F. IoU_t baselines: T when the assigned detection has "
        "IoU >= t (Table 3); breakdown by expectation x IoU verdict x BBSL verdict (Table 4)."
    )
    ev.results["bbsl"] = {}
    for name, rep in red.bbsl.items():
        write_report(rep, d / Path(name).stem)
        doc = rep.to_dict()
        ev.results["bbsl"][name] = doc
        t3 = doc["table3"]
        rows = [
            ["BBSL" if k == "bbsl" else k.replace("iou_", "IoU_"), r["T"], r["F"], _pct(r["rate"])]
            for k, r in t3.items()
        ]
        sec.table(
            ["test", "T (n)", "F (n)", "T/(T+F)"],
            rows,
            f"spec {name}: {len(rep.test_cases)} test cases from {rep.frames} frames",
        )
        t4 = doc["table4"]
        if t4:
            cols = list(next(iter(t4.values())))
            rows4 = [[exp] + [row[c]["count"] for c in cols] for exp, row in t4.items()]
            sec.table(["expectation", *cols], rows4, f"spec {name}: Table 4 breakdown")
            for exp, row in t4.items():
                for c in cols:
                    ex = row[c]["examples"]
                    if ex:
                        frames = ", ".join(f"{e['frame']}#{e['gt_index']} (IoU {e['iou']})" for e in ex)
                        sec.text(f"{name} · {exp} · {c}: e.g. {frames}", "note")
        if t3["bbsl"]["rate"] is not None:
            ev.report.summary.append(
                Metric(
                    f"BBSL pass rate ({Path(name).stem})",
                    100 * t3["bbsl"]["rate"],
                    "%",
                    f"n = {len(rep.test_cases)} test cases",
                )
            )


def _returns(ev: Evaluation, episodes: list[Any], notes: list[str], cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.evaluation.returns import returns_report

    sec = ev.report.section("Safety Gain / Residual Hazard / Availability Cost")
    sec.text(
        "SG = mean(S_fm - S_f), RH = mean(S_f* - S_fm), AC = mean(M_f - M_fm) (eq. 7-9) over the three aligned "
        "rollouts of each scenario: perception f, f with the monitor (fm) and ground truth f*. E1 'detect ML "
        "errors' (eq. 14-15), E2 'prevent accidents' (eq. 16-17). SG + RH is the hazard of f (eq. 6)."
    )
    for n in notes:
        sec.text(n, "warn")
    doc = returns_report(episodes, cfg.returns)
    ev.results["returns"] = doc
    (out / "returns.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    rows = []
    for scheme in ("E1", "E2"):
        block = doc.get(scheme)
        if not isinstance(block, dict):
            continue
        for avg in ("frames", "episodes"):
            m = block[avg]
            rows.append([scheme, avg, m["SG"], m["RH"], m["AC"], m["hazard_f"], m["n"]])
            if avg == "frames":
                for key in ("SG", "RH", "AC"):
                    ev.report.summary.append(Metric(f"{key} ({scheme}, per frame)", m[key], "", f"n = {m['n']} frames"))
    sec.table(["scheme", "averaged over", "SG", "RH", "AC", "hazard of f", "n"], rows)
    for n in doc.get("notes", []):
        sec.text(str(n), "note")


def run_evaluate(
    inputs: Sequence[str | Path],
    cfg: EvaluateConfig,
    config_text: str,
    out: Path,
    jobs: int = 1,
    console: Console | None = None,
    episode_logs: Sequence[str | Path] = (),
) -> Evaluation:
    """Run everything the config asks for on the bags found in ``inputs``; writes results and report."""
    console = console or Console(stderr=True)
    out.mkdir(parents=True, exist_ok=True)
    bags = find_bags(inputs)
    if not bags:
        raise NothingUsableError(f"no rosbag2 bag found in {', '.join(map(str, inputs))}")
    t0 = time.perf_counter()
    with progress_bar(console) as bar:
        task = bar.add_task("reading bags", total=len(bags))
        partials = map_bags(bags, cfg, out / "partials", jobs, on_done=lambda _: bar.advance(task))
    red = reduce_partials(partials, cfg)
    t1 = time.perf_counter()
    if red.frames == 0:
        lines = [f"  {b}: {r}" for b, r in red.read_reports.items()]
        raise NothingUsableError("no usable frame in any input:\n" + "\n".join(lines))
    report = Report("perception_safety evaluation", f"{len(bags)} bag(s), {red.frames} frames")
    report.inputs = [str(b) for b in bags]
    report.config_text = config_text
    ev = Evaluation(
        results={
            "format": RESULTS_FORMAT,
            "inputs": report.inputs,
            "frames": red.frames,
            "data_quality": red.read_reports,
        },
        report=report,
    )
    ev.timings["read_and_map_s"] = t1 - t0
    analyses = cfg.evaluate.analyses
    all_steps = (("confusion", _confusion), ("pcd", _pcd), ("verification", _verification), ("bbsl", _bbsl))
    steps = [(a, f) for a, f in all_steps if a in analyses]
    episodes, notes = _read_episodes(episode_logs) if "returns" in analyses else ([], [])
    if episodes:
        steps.append(("returns", lambda ev, red, cfg, out: _returns(ev, episodes, notes, cfg, out)))
    with progress_bar(console) as bar:
        task = bar.add_task("analyses", total=len(steps))
        for name, step in steps:
            bar.update(task, description=f"analysis: {name}")
            ts = time.perf_counter()
            step(ev, red, cfg, out)
            ev.timings[f"{name}_s"] = time.perf_counter() - ts
            bar.advance(task)
    _data_quality_section(ev, red)
    ev.results["summary"] = [m.__dict__ for m in report.summary]
    (out / "results.json").write_text(json.dumps(ev.results, indent=1) + "\n", encoding="utf-8")
    report.write(out / "report.html")
    return ev


def _read_episodes(paths: Sequence[str | Path]) -> tuple[list[Any], list[str]]:
    from perception_safety.io.episode_log import EpisodeLogReport, read_episode_log

    episodes: list[Any] = []
    notes: list[str] = []
    for path in paths:
        rep = EpisodeLogReport()
        episodes += read_episode_log(path, rep)
        notes += [f"{path}: {n}" for n in rep.messages]
    return episodes, notes


def _data_quality_section(ev: Evaluation, red: Reduced) -> None:
    sec = ev.report.section("Data quality")
    rows = []
    for bag, r in red.read_reports.items():
        unmatched = ", ".join(f"{t}: {n}" for t, n in r["unmatched"].items()) or "0"
        rows.append([bag, r["frames"], len(r["skipped"]), unmatched, ", ".join(r["missing_topics"]) or "-"])
    sec.table(["bag", "frames (n)", "malformed skipped (n)", "unmatched messages", "missing topics"], rows)
    for bag, r in red.read_reports.items():
        for topic, index, reason in r["skipped"][:20]:
            sec.text(f"{bag}: {topic} message #{index}: {reason}", "warn")
