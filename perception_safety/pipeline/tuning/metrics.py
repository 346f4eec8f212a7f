"""The figures of one operating point: E1 SG/RH/AC from the recorded frames (the SG/RH/AC paper's classification
form, eq. 10-15, episodes as clusters) and SG_sys/RH_sys/AC_sys of the monitored Markov chain built from the
confusion counts split by that point's verdicts, each with bounds at the sweep's simultaneous level.

Bounds are simultaneous over the swept points: every interval is computed at ``alpha / (points x requirements)``
(Bonferroni), so "the best point that meets a requirement by its bound" is not the optimistic best of many
intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion import ConfusionConfig
from perception_safety.evaluation.confusion.by_verdict import split_by_verdict
from perception_safety.evaluation.returns import classification_returns, safety_metrics
from perception_safety.evaluation.returns.intervals import returns_intervals
from perception_safety.pipeline.tuning.sweep import EpisodeJudgements
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.system_metrics import system_metrics

E1_KEYS = ("SG", "RH", "AC")
SYS_KEYS = ("SG_sys", "RH_sys", "AC_sys")


def e1_figures(episodes: Sequence[EpisodeJudgements], point: int, alpha: float) -> dict[str, Any]:
    """E1 point values over all frames and their episode-clustered bounds (Korn-Graubard, `returns.intervals`)."""
    per = [classification_returns(np.asarray(e.tau, dtype=bool), e.alarm_array(point)) for e in episodes if e.tau]
    tau = np.concatenate([np.asarray(e.tau, dtype=bool) for e in episodes if e.tau])
    alarm = np.concatenate([e.alarm_array(point) for e in episodes if e.tau])
    m = safety_metrics(classification_returns(tau, alarm))
    iv = returns_intervals(per, "frames", alpha, nonnegative=True)
    out: dict[str, Any] = {"frames": int(tau.size), "episodes": len(per), "alarm_rate": float(alarm.mean()),
                           "error_rate": float(tau.mean())}
    for key, value in (("SG", m.sg), ("RH", m.rh), ("AC", m.ac)):
        out[key] = {"value": value, "lower": iv[f"{key}_lower"], "upper": iv[f"{key}_upper"]}
    return out


def system_figures(episodes: Sequence[EpisodeJudgements], point: int, confusion: ConfusionConfig,
                   verification: VerificationConfig, alpha: float, speed: int | None, initial_speed: int | None
                   ) -> dict[str, Any]:
    """SG_sys/RH_sys/AC_sys of the monitored chain at one (V, v0), with the interval chains' bounds."""
    frames = [f for e in episodes for f in e.frames]
    alarms: list[bool | None] = [bool(a) for e in episodes for a in e.alarms[point]]
    split = split_by_verdict(frames, alarms, confusion, "tuning")
    V = speed if speed is not None else max(verification.max_speeds)
    v0 = initial_speed if initial_speed is not None else V
    cfg = verification.model_copy(update={"alpha": alpha, "max_speeds": [V], "initial_speeds": [v0]})
    try:
        doc = system_metrics(split, cfg)
    except VerificationError as exc:
        return {"error": str(exc)}
    variant = cfg.monitor_loop.variants[0]
    out: dict[str, Any] = {"variant": variant, "max_speed": V, "initial_speed": v0,
                           "hazard_env": cfg.monitor_loop.hazard_envs[0] if cfg.monitor_loop.hazard_envs else None,
                           "mission_env": (cfg.monitor_loop.mission_loss_envs[0]
                                           if cfg.monitor_loop.mission_loss_envs else None)}
    for r in doc["results"]:
        if r["variant"] != variant or r["max_speed"] != V or r["initial_speed"] != v0:
            continue
        wanted = out["hazard_env"] if r["measure"] == "hazard" else out["mission_env"]
        if r["true_env"] != wanted:
            continue
        for key in (("SG_sys", "RH_sys") if r["measure"] == "hazard" else ("AC_sys",)):
            out[key] = {"value": r[key], "lower": r.get(f"{key}_lower"), "upper": r.get(f"{key}_upper")}
    missing = [k for k in SYS_KEYS if k not in out]
    if missing:
        out["error"] = (f"no {', '.join(missing)} at V={V}, v0={v0} ({variant}): "
                        + ("; ".join(f"{k}: {v}" for k, v in doc["skipped"].items()) or "not computed"))
    out["warnings"] = [w["message"] for w in doc["warnings"]]
    return out
