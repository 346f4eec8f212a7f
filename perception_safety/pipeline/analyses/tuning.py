"""Evaluate steps for the ``tuning`` and ``model_check`` sections: the monitor's operating points and the check of
these inputs against a previous run's confusion model, each a report section (docs/monitor-tuning.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perception_safety.io.config import parse_yaml
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig


def check_sections(cfg: EvaluateConfig, config_text: str) -> None:
    """The ``tuning`` and ``model_check`` sections checked before any input is read: parameters, values,
    requirements and speeds parse, the base monitors load, the model folder holds a run (exit 2 otherwise)."""
    if cfg.tuning is not None:
        from perception_safety.pipeline.tuning.checks import check_speeds
        from perception_safety.pipeline.tuning.grid import TuningError, operating_points
        from perception_safety.pipeline.tuning.run import base_monitors
        from perception_safety.pipeline.tuning.select import parse_requirement

        t = cfg.tuning
        data = parse_yaml(config_text, "config")
        try:
            operating_points(base_monitors(data, Path(cfg.base_dir)), t.params,
                             t.values)
            for r in t.require:
                parse_requirement(r)
            check_speeds(t.speed, t.initial_speed, cfg.verification)
        except TuningError as exc:  # the messages name tune-monitor's flags: say which section they come from
            raise TuningError(f"config section tuning (params/values/require/speed as tune-monitor's flags): {exc}") \
                from None
    if cfg.model_check is not None:
        from perception_safety.pipeline.validity import ValidityError

        model = Path(cfg.model_check.model)
        model = model if model.is_absolute() else Path(cfg.base_dir) / model
        if not (model / "results.json").is_file():
            raise ValidityError(f"model_check.model: {model}: no results.json (an `evaluate --out` folder is needed)")
        if not any((model / "partials").glob("*.json")):
            raise ValidityError(f"model_check.model: {model}/partials: no partials: the model's per-episode counts "
                                "are needed")


def run_tuning_step(ev: Evaluation, cfg: EvaluateConfig, config_text: str, out: Path, inputs: Sequence[str]) -> None:
    from perception_safety.pipeline.tuning import TuningRequest, run_tuning
    from perception_safety.pipeline.tuning.report import tradeoff_figure
    from perception_safety.pipeline.tuning.run import base_monitors
    from perception_safety.pipeline.tuning.select import figure

    t = cfg.tuning
    if t is None:  # the caller adds this step only with a tuning section
        return
    req = TuningRequest(inputs, t.params, t.values, t.require, t.maximise, t.speed, t.initial_speed, t.alpha)
    data = parse_yaml(config_text, "config")
    doc = run_tuning(req, cfg, base_monitors(data, Path(cfg.base_dir)),
                     out / "tuning")
    rows, sel = doc["rows"], doc["selection"]
    ev.results["tuning"] = {k: doc[k] for k in ("params", "values", "level", "simultaneous", "pareto_front",
                                                "selection", "frames", "episodes")}
    ev.results["tuning"]["rows"] = [{"label": r["label"], "params": r["params"],
                                     **{k: figure(r, k) for k in ("SG", "RH", "AC", "SG_sys", "RH_sys", "AC_sys")}}
                                    for r in rows]
    sec = ev.report.section("Monitor operating points (tuning)")
    for w in doc["warnings"]:
        ev.warn("tuning", w, "tuning_sweep")
    if sel.get("chosen") is not None:
        sec.text(f"Chosen: {rows[sel['chosen']]['label']}, meeting {', '.join(sel['requirements']) or 'no requirement'}"
                 f" by its simultaneous bounds ({sel['objective_bound']} {sel['objective_value']:.3g}); written to "
                 "tuning/monitors.tuned.yaml.")
    elif sel["requirements"]:
        near = rows[sel["nearest"]]["label"] if sel.get("nearest") is not None else "-"
        msg = (f"no operating point meets {', '.join(sel['requirements'])} by its bounds; the nearest, {near}, "
               f"misses by {sel['nearest_miss']:.3g}")
        sec.text(msg.capitalize() + ".")
        ev.warn("tuning", msg, "tuning_no_point")
    sec.figure(tradeoff_figure(rows, doc["pareto_front"], sel.get("chosen"), doc["level"]),
               "SG and RH against AC per operating point (E1 top, the chain with the monitor bottom); bars: "
               f"simultaneous {100 * doc['level']:g} % intervals; ringed: Pareto front; star: chosen")

    def cell(r: dict, k: str) -> str:
        f = figure(r, k)
        if f is None:
            return "-"
        return f"{f['value']:.3g} [{f['lower']:.3g}, {f['upper']:.3g}]" if f.get("lower") is not None \
            else f"{f['value']:.3g}"

    sec.table(["point", "alarm rate", "SG", "RH", "AC", "SG_sys", "RH_sys", "AC_sys"],
              [[r["label"], f"{r['e1']['alarm_rate']:.3f}", *(cell(r, k) for k in
               ("SG", "RH", "AC", "SG_sys", "RH_sys", "AC_sys"))] for r in rows],
              f"{doc['frames']} frames in {doc['episodes']} episodes; {doc['simultaneous']}")


def run_model_check_step(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, config_text: str, out: Path) -> None:
    import json

    from perception_safety.pipeline.validity import compare, load_run
    from perception_safety.safe_io import write_text

    mc = cfg.model_check
    if mc is None:  # the caller adds this step only with a model_check section
        return
    model = Path(mc.model) if Path(mc.model).is_absolute() else Path(cfg.base_dir) / mc.model
    results, old = load_run(model, cfg)
    if red.confusion is None:
        ev.warn("model_check", "no confusion counts in this run: the model check needs them", "model_check_skipped")
        return
    doc = compare(model, results, old, red.confusion, cfg, config_text, [], mc.alpha)
    write_text(out / "model_check.json", json.dumps(doc, indent=1) + "\n")
    ev.results["model_check"] = {k: doc[k] for k in ("model", "alpha", "holds", "columns_tested", "columns_moved",
                                                     "phi_model", "phi_new", "notes")}
    sec = ev.report.section("Does the verified model still hold? (model check)")
    verdict = ("no column moved (this does not prove the model holds: see the detectable shifts)" if doc["holds"]
               else f"{len(doc['columns_moved'])} column(s) moved: the verified P(phi) no longer applies")
    sec.text(f"Against {model}: {verdict}. {doc['method']}.")
    if not doc["holds"]:
        ev.warn("model_check", f"these inputs do not fit the model of {model}: {verdict}", "model_moved")
    sec.table(["bin", "true", "model rate [CI] (ep.)", "new rate [CI] (ep.)", "p (Holm)", "detectable shift", ""],
              [[c["bin"], c["true_label"],
                f"{c['old_rate']:.3f} [{c['old_interval'][0]:.3f}, {c['old_interval'][1]:.3f}] ({c['old_clusters']})",
                f"{c['new_rate']:.3f} [{c['new_interval'][0]:.3f}, {c['new_interval'][1]:.3f}] ({c['new_clusters']})",
                f"{c['p_adjusted']:.3g}",
                "-" if c["min_detectable_shift"] is None else f"{c['min_detectable_shift']:.3f}",
                "MOVED" if c["rejected"] else ""] for c in doc["columns"]])
    for note in doc["notes"]:
        sec.text(note, "note")
