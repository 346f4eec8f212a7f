"""Model-checked Safety Gain, Residual Hazard and Availability Cost of a runtime monitor (issue 14).

For each variant, max speed ``V`` and initial speed ``v0``, three chains of the same controller and counts
(`monitor_loop`): ``f`` (monitor ignored), ``f + m`` (fail-safe on alarm) and ``f*`` (perfect perception):

    SG_sys = P_f(hazard) − P_{f+m}(hazard)         RH_sys = P_{f+m}(hazard) − P_{f*}(hazard)
    AC_sys = P_{f+m}(mission loss) − P_f(mission loss)

the SG/RH/AC paper's eqs. 3-5 with the safety return −1 on a hazard and the mission return −1 on a stop
without a pedestrian, the expectation taken over the chain instead of over recorded episodes. ``hazard``
(default ``P=? [F "past_k"]``: at or past the crosswalk) is checked in the environments with a pedestrian,
``mission loss`` (default ``P=? [F ("stopped" & !"at_end")]``) in those without. With ``bounds.enabled``
every value also gets the interval of the certified-bounds machinery (issue 13): the interval DTMCs of ``f``
and ``f + m`` at ``1 − alpha/2`` each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.by_verdict import VerdictSplit
from perception_safety.verification.bounds import spec_bounds_steps
from perception_safety.verification.builder import build_chain
from perception_safety.verification.car_model import car_system, geometry_for, observation_model
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.controllers import resolve_controller
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import build_interval_chain, decision_bins
from perception_safety.verification.monitor_loop import (
    check_split,
    joint_observations,
    perfect_observations,
    verdict_column_counts,
)
from perception_safety.verification.specs import check_steps
from perception_safety.verification.storm_batch import Steps, run_all

CHAINS = ("f", "fm", "fstar")


def _probabilities(split: VerdictSplit, cfg: VerificationConfig, variant: str, env_name: str, V: int,
                   formula: str, controller: Any,
                   warnings: list[dict[str, str]]) -> Steps[tuple[list[int], dict[str, Any]]]:
    """P(formula) at the initial states of the f, f+m and f* chains; with bounds enabled also the interval
    chains' ``(lower, upper)`` of f and f+m, each at ``1 − alpha/2`` so that both hold jointly at ``1 − alpha``.
    A `storm_batch` computation: `system_metrics` has every chain's checks answered together."""
    marginal = split.marginal
    env = cfg.true_envs[env_name]
    g, system = car_system(marginal, cfg, variant, env_name, V, controller)
    models = {
        "f": observation_model(marginal, variant, env, cfg.beyond_last_bin, "frames with a verdict"),
        "fm": joint_observations(split, variant, env, cfg.beyond_last_bin, f"{variant} + monitor verdict"),
        "fstar": perfect_observations(marginal, variant, env),
    }
    if cfg.bounds.enabled:  # each chain's intervals jointly at 1 - alpha/2 over the bins it decides in
        alpha = cfg.alpha / 2
        models["f"] = observation_model(marginal, variant, env, cfg.beyond_last_bin, "frames with a verdict", alpha,
                                        decision_bins(system, models["f"]))
        models["fm"] = joint_observations(split, variant, env, cfg.beyond_last_bin, f"{variant} + monitor verdict",
                                          alpha, decision_bins(system, models["fm"]).size)
    starts = [int(s) for s in system.initial_states]
    out: dict[str, Any] = {}
    for key, model in models.items():
        out[key] = (yield from check_steps(build_chain(system, model), formula))[starts]
        if model.has_intervals:
            b = (yield from spec_bounds_steps(build_interval_chain(system, model), {"q": formula},
                                              cfg.bounds.cyclic_horizon))["q"]
            if isinstance(b, VerificationError):
                warnings.append({"code": "no_bounds", "message": f"{formula}: no interval bounds ({b})"})
                continue
            if not b.exact and b.residual > 1e-9:
                warnings.append({"code": "widened_bounds", "message": (
                    f"{variant}/{env_name}/V={V}, chain {key}: cycles; bounds widened by {b.residual:.3g}")})
            out[f"{key}_bounds"] = (b.lower[starts], b.upper[starts])
    speeds = [int(g.cell_speed(np.array([s]))[1][0]) for s in starts]
    return speeds, out


def _with_bounds(rec: dict[str, Any], p: dict[str, Any], i: int) -> None:
    """Interval of each difference from the chains' intervals (f* is exact): [lo_a − hi_b, hi_a − lo_b]."""
    if "f_bounds" not in p or "fm_bounds" not in p:
        return
    (f_lo, f_hi), (m_lo, m_hi) = p["f_bounds"], p["fm_bounds"]
    rec.update(P_f_lower=float(f_lo[i]), P_f_upper=float(f_hi[i]), P_fm_lower=float(m_lo[i]),
               P_fm_upper=float(m_hi[i]))
    if rec["measure"] == "hazard":
        rec.update(SG_sys_lower=float(f_lo[i] - m_hi[i]), SG_sys_upper=float(f_hi[i] - m_lo[i]),
                   RH_sys_lower=float(m_lo[i]) - rec["P_fstar"], RH_sys_upper=float(m_hi[i]) - rec["P_fstar"])
    else:
        rec.update(AC_sys_lower=float(m_lo[i] - f_hi[i]), AC_sys_upper=float(m_hi[i] - f_lo[i]))


def assumptions(cfg: VerificationConfig) -> list[str]:
    """What SG_sys/RH_sys/AC_sys rest on, stated beside the numbers (issue 24 item 8)."""
    ml = cfg.monitor_loop
    fail_safe = ("brake: speed - 1 per step on an alarm" if ml.fail_safe == "brake" else
                 f"stop_now: deceleration {ml.emergency_deceleration or 'unlimited'} cells/step per step on an alarm")
    return [
        f"the true environment is static: in {ml.hazard_envs} a pedestrian is present at the crosswalk at every step "
        "of the run (hazard = the formula's proxy, e.g. passing the stop cell, not a collision with a pedestrian who "
        "crosses once)",
        "(observation, verdict) is drawn afresh at every step from the joint counts of the car's distance bin: given "
        "the cell, independent of earlier steps (no runs of misses or alarms; see the independence test) and of "
        "anything but the bin; within a frame the verdict's dependence on the detection error is the recorded joint "
        "count (class-labeled environments with several objects: objects independent given the verdict)",
        f"fail-safe semantics: {fail_safe}; a controller table/callable with an alarm column decides itself",
        "f* is perfect perception without a monitor; the recorded frames represent the true environment",
    ]


def verdict_counts(split: VerdictSplit, cfg: VerificationConfig, variant: str, env_name: str) -> list[dict[str, Any]]:
    """``n(no alarm)``, ``n(alarm)`` per bin of the environment's column, for the bins the roads pass through."""
    counts = verdict_column_counts(split, variant, cfg.true_envs[env_name])
    pooled = not variant.endswith("_by_distance")
    edges = [(0.0, float("inf"))] if pooled else list(split.no_alarm.bin_edges)
    reach = max(geometry_for(V, cfg.geometry).road_cells for V in cfg.max_speeds) * cfg.geometry.cell_length_m
    rows = []
    for (lo, hi), (n0, n1) in zip(edges, counts.tolist(), strict=True):
        if lo <= reach:
            rows.append({"variant": variant, "true_env": env_name, "bin": [lo, hi], "n_no_alarm": int(n0),
                         "n_alarm": int(n1)})
    return rows


def system_metrics(split: VerdictSplit, cfg: VerificationConfig) -> dict[str, Any]:
    """SG_sys/RH_sys/AC_sys per (variant, V, v0); chains that cannot be built are listed in ``skipped``.

    ``warnings`` (``{"code", "message"}``) names every verdict column with zero samples in a bin the roads
    pass through (its ``P(alarm)`` or ``P(no alarm)`` there is 0 by lack of data, not by observation) and
    every configured environment that is not among ``true_envs``.
    """
    check_split(split)
    ml = cfg.monitor_loop
    controller = resolve_controller(cfg.controller)
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    warnings: list[dict[str, str]] = []
    counts: list[dict[str, Any]] = []
    jobs = [("hazard", env, ml.hazard_spec) for env in ml.hazard_envs]
    jobs += [("mission_loss", env, ml.mission_loss_spec) for env in ml.mission_loss_envs]
    for measure, env_name, _ in jobs:
        if env_name not in cfg.true_envs:
            warnings.append({"code": "env_not_configured", "message": f"{measure} environment {env_name!r} is "
                             f"not among true_envs {sorted(cfg.true_envs)}: not checked"})
    order: list[list[dict[str, str]] | tuple[Any, ...]] = []  # counts' warnings and chains, in the order met
    for variant in ml.variants:
        found: list[dict[str, str]] = []
        order.append(found)
        for env_name in dict.fromkeys(e for _, e, _ in jobs if e in cfg.true_envs):
            try:
                rows = verdict_counts(split, cfg, variant, env_name)
            except VerificationError as exc:
                skipped[f"{variant}/{env_name}"] = str(exc)
                continue
            counts += rows
            for r in rows:
                total = r["n_no_alarm"] + r["n_alarm"]
                if total and (r["n_alarm"] == 0 or r["n_no_alarm"] == 0):
                    empty = "alarm" if r["n_alarm"] == 0 else "no-alarm"
                    found.append({"code": "zero_sample_verdict", "message": (
                        f"{variant}, env {env_name}, bin [{r['bin'][0]:g}, {r['bin'][1]:g}) m: the {empty} verdict "
                        f"column has 0 of {total} samples; P({empty.replace('-', ' ')}) = 0 there is a lack of data, "
                        "not an observation")})
        for measure, env_name, formula in jobs:
            if env_name not in cfg.true_envs:
                continue
            for V in cfg.max_speeds:
                own: list[dict[str, str]] = []
                order.append((variant, measure, env_name, V, own,
                              _probabilities(split, cfg, variant, env_name, V, formula, controller, own)))
    done = iter(run_all([o[5] for o in order if isinstance(o, tuple)]))
    for item in order:
        if isinstance(item, list):
            warnings += item
            continue
        variant, measure, env_name, V, own, _ = item
        outcome = next(done)
        warnings += own
        if isinstance(outcome.error, VerificationError):
            skipped[f"{variant}/{measure}/{env_name}/V{V}"] = str(outcome.error)
            continue
        if outcome.error is not None:
            raise outcome.error
        speeds, p = outcome.value
        for i, v0 in enumerate(speeds):
            rec: dict[str, Any] = {"variant": variant, "measure": measure, "true_env": env_name,
                                   "max_speed": V, "initial_speed": v0,
                                   **{f"P_{k}": float(p[k][i]) for k in CHAINS}}
            if measure == "hazard":
                rec["SG_sys"] = rec["P_f"] - rec["P_fm"]
                rec["RH_sys"] = rec["P_fm"] - rec["P_fstar"]
            else:
                rec["AC_sys"] = rec["P_fm"] - rec["P_f"]
            _with_bounds(rec, p, i)
            results.append(rec)
    return {
        "assumptions": assumptions(cfg),
        "definitions": {
            "SG_sys": "P_f(hazard) - P_fm(hazard)", "RH_sys": "P_fm(hazard) - P_fstar(hazard)",
            "AC_sys": "P_fm(mission loss) - P_f(mission loss)",
            "hazard": ml.hazard_spec, "mission_loss": ml.mission_loss_spec,
        },
        "bounds": ("interval DTMCs of f and f+m (Clopper-Pearson per column cell, Bonferroni over the cells of "
                   "the used columns in every bin the chain decides in, Storm IDTMC), each at "
                   f"1 - alpha/2 = {1 - cfg.alpha / 2:g} so both hold jointly at 1 - alpha = {1 - cfg.alpha:g}; a "
                   "difference's interval is [lower_a - upper_b, upper_a - lower_b]; f* is exact"
                   if cfg.bounds.enabled else "off"),
        "controller": controller.name,
        "fail_safe": ml.fail_safe,
        "emergency_deceleration": ml.emergency_deceleration,
        "frames_with_verdict": split.frames_with_verdict,
        "frames_without_verdict": split.frames_without_verdict,
        "verdict_counts": counts,
        "results": results,
        "skipped": skipped,
        "warnings": warnings,
    }
