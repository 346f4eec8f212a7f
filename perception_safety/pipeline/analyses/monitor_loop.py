"""Evaluate step: the runtime monitor inside the Markov chain — model-checked SG/RH/AC beside E1/E2 (issue 14)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric
from perception_safety.safe_io import atomic_open, write_text

ASSUMPTIONS = (
    "What each side assumes. E2 (episode logs) counts the collisions and needless stops that happened in the "
    "closed-loop simulator over the episodes run — with the simulator's dynamics, a pedestrian who crosses once, and "
    "the monitor's real correlation from frame to frame; its uncertainty is that of a handful of episodes. "
    "Model-checked SG_sys/RH_sys/AC_sys: the abstract car–pedestrian chain with the configured controller, geometry "
    "and fail-safe action, a pedestrian present at the crosswalk at every step of the run, hazard = the configured "
    "formula (a proxy: passing the stop cell, not a collision), and at every step the pair (observation, verdict) "
    "drawn afresh from the joint counts of the car's distance bin (independent from step to step given the cell). "
    "The gap between the two comes mainly from the hazard proxy — the chain counts every pass of the stop cell as a "
    "hazard with the pedestrian standing there, the episodes only the collisions that happened — not from the "
    "independence assumption. E1 counts detector errors and alarms per frame (a rate of errors, not of outcomes) "
    "and is shown separately: it is not the quantity SG_sys estimates."
)


def _fmt(v: float) -> str:
    return f"{v:.4f}"


def _iv(r: dict[str, Any], key: str) -> str:
    """``value [lower, upper]`` when the interval chains gave bounds."""
    if f"{key}_lower" in r:
        return f"{_fmt(r[key])} [{_fmt(r[f'{key}_lower'])}, {_fmt(r[f'{key}_upper'])}]"
    return _fmt(r[key])


def verdicts_from_episodes(episodes: Sequence[Any], cfg: EvaluateConfig) -> Any:
    """The joint counts from episode logs: the frames and alarms of the ``returns.e1.rollout`` rollouts."""
    from perception_safety.evaluation.confusion.by_verdict import split_by_verdict

    steps = [s for e in episodes if e.rollout == cfg.returns.e1.rollout for s in e.steps if s.frame is not None]
    if not steps:
        return None
    return split_by_verdict([s.frame for s in steps], [bool(s.alarm) for s in steps], cfg.confusion, "episode logs")


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path, episodes: Sequence[Any] = ()) -> None:
    """Model-checked SG/RH/AC from the bags' verdicts, else from the episode logs' (never both: the demo's bags and
    logs hold the same frames)."""
    from perception_safety.verification.errors import VerificationError
    from perception_safety.verification.system_metrics import system_metrics

    sec = ev.report.section("Monitor in the loop: model-checked SG / RH / AC")
    split, source = red.verdicts, "bags' per-frame monitor status"
    if split is None and episodes:
        split, source = verdicts_from_episodes(episodes, cfg), f"episode logs ('{cfg.returns.e1.rollout}' rollouts)"
    for note in red.verdict_notes:
        ev.warn("monitor_loop", f"no monitor verdicts: {note}", "no_verdicts")
    if split is None:
        sec.text("Neither a bag nor an episode log carries the monitor's per-frame verdict with frames: the "
                 "monitor-in-the-loop chains were not built.", "warn")
        ev.results["monitor_loop"] = {"results": [], "skipped": {"all": "no monitor verdicts recorded"}}
        return
    vcfg = cfg.verification
    try:
        doc = system_metrics(split, vcfg)
    except VerificationError as exc:
        ev.warn("monitor_loop", f"not computed: {exc}", "error")
        ev.results["monitor_loop"] = {"results": [], "skipped": {"all": str(exc)}}
        return
    for w in doc["warnings"]:
        ev.warn("monitor_loop", w["message"], w["code"])
    for key, msg in doc["skipped"].items():
        ev.warn("monitor_loop", f"{key} not checked: {msg}", "chain_skipped")
    doc["verdict_source"] = source
    ev.results["monitor_loop"] = doc
    d = out / "verification"
    d.mkdir(parents=True, exist_ok=True)
    write_text(d / "monitor_loop.json", json.dumps(doc, indent=1))
    _write_csv(d / "monitor_loop.csv", doc["results"])
    ml = vcfg.monitor_loop
    sec.text(
        f"Observation = (detector observation, monitor verdict '{ml.status}'): joint counts n(o, alarm) per distance "
        f"bin and true environment from the {doc['frames_with_verdict']} frames with a recorded verdict ({source}; "
        f"{doc['frames_without_verdict']} without one left out). Three chains of controller '{doc['controller']}' "
        f"from the same counts: f (verdict summed out, the monitor ignored), f+m (on an alarm the fail-safe "
        f"'{ml.fail_safe}' acts) and f* (perfect perception). SG_sys = P_f(hazard) − P_f+m(hazard), "
        f"RH_sys = P_f+m(hazard) − P_f*(hazard), AC_sys = P_f+m(mission loss) − P_f(mission loss); hazard = "
        f"{ml.hazard_spec} in {ml.hazard_envs}, mission loss = {ml.mission_loss_spec} in {ml.mission_loss_envs}."
    )
    sec.table(
        ["variant", "true env", "bin [m]", "n (no alarm)", "n (alarm)"],
        [[c["variant"], c["true_env"], f"[{c['bin'][0]:g}, {c['bin'][1]:g})", c["n_no_alarm"], c["n_alarm"]]
         for c in doc["verdict_counts"]],
        "Samples behind each verdict column (the environment's column, bins the roads pass through): splitting by "
        "verdict leaves fewer samples per estimate than the plain matrices.",
    )
    rows = _metric_rows(doc["results"])
    sec.table(["variant", "V", "v0", "P_f(hazard)", "P_f+m(hazard)", "P_f*(hazard)", "SG_sys", "RH_sys",
               "P_f(loss)", "P_f+m(loss)", "AC_sys"], rows,
              f"Model-checked, per max speed V and initial speed v0; [lower, upper]: {doc.get('bounds', 'off')}")
    side = _beside(doc["results"], ev.results.get("returns"), vcfg.max_speeds, ("E2",))
    sec.table(["source", "SG", "RH", "AC", "n"], side,
              "Closed-loop outcomes (E2, episode logs) beside model-checked (largest V, range over initial speeds)")
    e1 = _beside([], ev.results.get("returns"), vcfg.max_speeds, ("E1",))
    if e1:
        sec.table(["source", "SG", "RH", "AC", "n"], e1,
                  "E1: per-frame error and alarm rates — a different quantity from SG_sys/RH_sys/AC_sys, "
                  "not beside them")
    sec.text("Assumptions of the model-checked values: " + "; ".join(doc.get("assumptions", [])) + ".")
    sec.text(ASSUMPTIONS)
    V = max(vcfg.max_speeds)
    for key, worst in (("SG_sys", min), ("RH_sys", max), ("AC_sys", max)):
        recs = [r for r in doc["results"] if key in r and r["max_speed"] == V]
        if recs:
            r = worst(recs, key=lambda r, key=key: r[key])
            bounds = f", bounds [{r[f'{key}_lower']:.3g}, {r[f'{key}_upper']:.3g}]" if f"{key}_lower" in r else ""
            ev.report.summary.append(Metric(f"{key} (model-checked, worst v0)", r[key], "",
                                            f"{r['variant']}, V = {V}, v0 = {r['initial_speed']}{bounds}; "
                                            f"{doc['frames_with_verdict']} frames"))


def _metric_rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    by: dict[tuple[str, int, int], dict[str, Any]] = {}
    for r in results:
        row = by.setdefault((r["variant"], r["max_speed"], r["initial_speed"]), {})
        if r["measure"] == "hazard":
            row.update(hf=_iv(r, "P_f"), hm=_iv(r, "P_fm"), hs=_fmt(r["P_fstar"]), sg=_iv(r, "SG_sys"),
                       rh=_iv(r, "RH_sys"))
        else:
            row.update(lf=_iv(r, "P_f"), lm=_iv(r, "P_fm"), ac=_iv(r, "AC_sys"))
    out = []
    for (variant, V, v0), r in by.items():
        vals = [r.get(k, "–") for k in ("hf", "hm", "hs", "sg", "rh", "lf", "lm", "ac")]
        out.append([variant, V, v0, *vals])
    return out


def _beside(results: list[dict[str, Any]], returns: Any, max_speeds: list[int],
            schemes: tuple[str, ...] = ("E2",)) -> list[list[Any]]:
    rows: list[list[Any]] = []
    if isinstance(returns, dict):
        for scheme in schemes:
            block = returns.get(scheme)
            if isinstance(block, dict):
                for avg in ("frames", "episodes"):
                    m = block.get(avg)
                    if isinstance(m, dict):
                        rows.append([f"{scheme} ({avg})", _fmt(m["SG"]), _fmt(m["RH"]), _fmt(m["AC"]), m["n"]])
    elif results:
        rows.append(["empirical: no episode logs given", "–", "–", "–", 0])
    if not results:
        return rows
    V = max(max_speeds)
    for variant in dict.fromkeys(r["variant"] for r in results):
        sel = [r for r in results if r["variant"] == variant and r["max_speed"] == V]

        def span(key: str, sel: list[dict[str, Any]] = sel) -> str:
            vals = [r[key] for r in sel if key in r]
            return f"{_fmt(min(vals))} – {_fmt(max(vals))}" if vals else "–"

        n_v0 = len({r["initial_speed"] for r in sel})
        rows.append([f"model-checked {variant}, V = {V}", span("SG_sys"), span("RH_sys"), span("AC_sys"),
                     f"{n_v0} initial speeds"])
    return rows


def _write_csv(path: Path, results: list[dict[str, Any]]) -> None:
    cols = ["variant", "measure", "true_env", "max_speed", "initial_speed", "P_f", "P_fm", "P_fstar", "SG_sys",
            "RH_sys", "AC_sys"]
    cols += [f"{c}_{side}" for c in ("P_f", "P_fm", "SG_sys", "RH_sys", "AC_sys") for side in ("lower", "upper")
             if any(f"{c}_{side}" in r for r in results)]
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in results:
            w.writerow([f"{r[c]:.17g}" if isinstance(r.get(c), float) else r.get(c, "") for c in cols])
