"""Model-checked Safety Gain, Residual Hazard and Availability Cost of a runtime monitor (issue 14).

For each variant, max speed ``V`` and initial speed ``v0``, three chains of the same controller and counts
(`monitor_loop`): ``f`` (monitor ignored), ``f + m`` (fail-safe on alarm) and ``f*`` (perfect perception):

    SG_sys = P_f(hazard) − P_{f+m}(hazard)         RH_sys = P_{f+m}(hazard) − P_{f*}(hazard)
    AC_sys = P_{f+m}(mission loss) − P_f(mission loss)

the SG/RH/AC paper's eqs. 3-5 with the safety return −1 on a hazard and the mission return −1 on a stop
without a pedestrian, the expectation taken over the chain instead of over recorded episodes. ``hazard``
(default ``P=? [F "past_k"]``: at or past the crosswalk) is checked in the environments with a pedestrian,
``mission loss`` (default ``P=? [F "stopped"]``) in those without.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.by_verdict import VerdictSplit
from perception_safety.verification.builder import build_chain
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.controllers import resolve_controller
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.monitor_loop import (
    check_split,
    joint_observations,
    perfect_observations,
    verdict_column_counts,
)
from perception_safety.verification.specs import check
from perception_safety.verification.sweep import car_system, geometry_for, observation_model

CHAINS = ("f", "fm", "fstar")


def _probabilities(split: VerdictSplit, cfg: VerificationConfig, variant: str, env_name: str, V: int,
                   formula: str, controller: Any) -> tuple[list[int], dict[str, np.ndarray]]:
    marginal = split.marginal
    env = cfg.true_envs[env_name]
    g, system = car_system(marginal, cfg, variant, env_name, V, controller)
    models = {
        "f": observation_model(marginal, variant, env, cfg.beyond_last_bin, "frames with a verdict"),
        "fm": joint_observations(split, variant, env, cfg.beyond_last_bin, f"{variant} + monitor verdict"),
        "fstar": perfect_observations(marginal, variant, env),
    }
    starts = [int(s) for s in system.initial_states]
    out = {}
    for key, model in models.items():
        values = check(build_chain(system, model), formula)
        out[key] = values[starts]
    speeds = [int(g.cell_speed(np.array([s]))[1][0]) for s in starts]
    return speeds, out


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
    for variant in ml.variants:
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
                    warnings.append({"code": "zero_sample_verdict", "message": (
                        f"{variant}, env {env_name}, bin [{r['bin'][0]:g}, {r['bin'][1]:g}) m: the {empty} verdict "
                        f"column has 0 of {total} samples; P({empty.replace('-', ' ')}) = 0 there is a lack of data, "
                        "not an observation")})
        for measure, env_name, formula in jobs:
            if env_name not in cfg.true_envs:
                continue
            for V in cfg.max_speeds:
                try:
                    speeds, p = _probabilities(split, cfg, variant, env_name, V, formula, controller)
                except VerificationError as exc:
                    skipped[f"{variant}/{measure}/{env_name}/V{V}"] = str(exc)
                    continue
                for i, v0 in enumerate(speeds):
                    rec: dict[str, Any] = {"variant": variant, "measure": measure, "true_env": env_name,
                                           "max_speed": V, "initial_speed": v0,
                                           **{f"P_{k}": float(p[k][i]) for k in CHAINS}}
                    if measure == "hazard":
                        rec["SG_sys"] = rec["P_f"] - rec["P_fm"]
                        rec["RH_sys"] = rec["P_fm"] - rec["P_fstar"]
                    else:
                        rec["AC_sys"] = rec["P_fm"] - rec["P_f"]
                    results.append(rec)
    return {
        "definitions": {
            "SG_sys": "P_f(hazard) - P_fm(hazard)", "RH_sys": "P_fm(hazard) - P_fstar(hazard)",
            "AC_sys": "P_fm(mission loss) - P_f(mission loss)",
            "hazard": ml.hazard_spec, "mission_loss": ml.mission_loss_spec,
        },
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
