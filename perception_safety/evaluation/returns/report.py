"""E1 and E2 of a set of logged rollouts as one JSON-ready document, and the words that explain a 0 (no silent
zeros): a setting that differs from the run's, an empty group, a monitored rollout that collides too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from perception_safety.core.episode import Episode
from perception_safety.evaluation.returns.alignment import Aligned, align
from perception_safety.evaluation.returns.config import ReturnsConfig, ReturnsError
from perception_safety.evaluation.returns.e1 import e1_metrics
from perception_safety.evaluation.returns.e2 import e2_metrics
from perception_safety.evaluation.returns.estimates import safety_metrics
from perception_safety.evaluation.returns.intervals import returns_intervals

# ---------------------------------------------------------------- report


def returns_report(
    episodes: Sequence[Episode], config: ReturnsConfig | None = None, alpha: float = 0.05
) -> dict[str, object]:
    """E1 and E2 results of a set of logged rollouts as a JSON-ready mapping (what ``returns --out`` writes).

    E1 is computed on the ``config.e1.rollout`` rollouts (skipped with a note when there are none);
    E2 on every scenario that has all three rollouts (skipped with a note when there is none). Every metric
    carries ``<key>_lower`` / ``<key>_upper`` at level ``1 - alpha`` with the episode as the unit (`intervals`).
    """
    config = config or ReturnsConfig()
    aligned = align(episodes)
    out: dict[str, object] = {
        "definitions": {
            "SG": "mean(S_fm - S_f) (eq. 7)",
            "RH": "mean(S_f* - S_fm) (eq. 8)",
            "AC": "mean(M_f - M_fm) (eq. 9)",
            "hazard_f": "SG + RH = mean(S_f* - S_f) (eq. 6)",
            "frames": "averaged over all frames of all episodes",
            "episodes": "E1: mean of per-episode frame averages; E2: returns from each episode's first frame",
            "intervals": "<key>_lower/<key>_upper: episodes as the independent unit (frames clustered by episode)",
        },
        "config": config.model_dump(mode="json"),
        "notes": list(aligned.incomplete),
    }
    e1_all = aligned.by_rollout.get(config.e1.rollout, ())
    e1_eps = [ep for ep in e1_all if ep.steps and any(s.frame is not None for s in ep.steps)]
    if len(e1_eps) < len(e1_all):
        out["notes"].append(  # type: ignore[union-attr]
            f"E1 skipped {len(e1_all) - len(e1_eps)} {config.e1.rollout} rollout(s) logged without frames"
        )
    if e1_eps:
        e1 = e1_metrics(e1_eps, config.e1)
        e1_parts = list(e1.per_episode_returns.values())
        out["E1"] = {
            "frames": e1.frames.as_dict() | returns_intervals(e1_parts, "frames", alpha, nonnegative=True),
            "episodes": e1.episodes.as_dict() | returns_intervals(e1_parts, "episodes", alpha, nonnegative=True),
            "counts": e1.counts.as_dict(),
            "per_episode": {k: v.as_dict() for k, v in e1.per_episode.items()},
        }
    else:
        out["notes"].append(f"E1 skipped: no rollout named {config.e1.rollout!r}")  # type: ignore[union-attr]
    if aligned.triples:
        e2 = e2_metrics(aligned.triples, config.e2)
        out["E2"] = {
            "frames": e2.frames.as_dict() | returns_intervals([e.frames for e in e2.per_episode], "frames", alpha),
            "episodes": e2.episodes.as_dict()
            | returns_intervals([e.episode_returns for e in e2.per_episode], "episodes", alpha),
            "per_episode": {
                e.episode: {
                    "horizon": e.horizon,
                    "collided": dict(e.collided),
                    "running_frames": dict(e.running_frames),
                    **safety_metrics(e.frames).as_dict(),
                }
                for e in e2.per_episode
            },
        }
    else:
        out["notes"].append("E2 skipped: no episode has all three rollouts (perception, monitored, ground_truth)")  # type: ignore[union-attr]
    if "E1" not in out and "E2" not in out:
        raise ReturnsError("returns: nothing to compute (no E1 rollout and no complete E2 triple)")
    out["warnings"] = explain(out, e1_eps, aligned, config)
    return out


# ---------------------------------------------------------------- no silent zeros

LOGGED_CONFIG_KEY = "returns_config"
"""Episode-meta key under which the runner records the ReturnsConfig it computed its own results with."""


def logged_config(episodes: Iterable[Episode]) -> ReturnsConfig | None:
    """The ReturnsConfig the episode runner recorded in the logs' meta (the first one found), or None."""
    for ep in episodes:
        raw = ep.meta.get(LOGGED_CONFIG_KEY)
        if isinstance(raw, Mapping):
            return ReturnsConfig.model_validate(raw)
    return None


def _first(steps: Iterable[object], attr: str) -> int | None:
    return next((s.t for s in steps if getattr(s, attr)), None)  # type: ignore[attr-defined]


def _condition(ep: Episode) -> str:
    m = ep.meta
    if "perturbation" in m:
        return f"perturbation {m['perturbation']} level {m.get('level', '?')}"
    return "no condition recorded"


def explain(
    doc: Mapping[str, object], e1_eps: Sequence[Episode], aligned: Aligned, config: ReturnsConfig
) -> list[str]:
    """Why a metric is 0 (or a setting makes it meaningless), in words: each line becomes a warning."""
    out: list[str] = []
    logged = logged_config(ep for eps in aligned.by_rollout.values() for ep in eps)
    if logged is not None and logged != config:
        diff = [
            f"{part}.{k}: {getattr(getattr(config, part), k)!r} here, {getattr(getattr(logged, part), k)!r} in the run"
            for part in ("e1", "e2")
            for k in type(getattr(config, part)).model_fields
            if getattr(getattr(config, part), k) != getattr(getattr(logged, part), k)
        ]
        out.append(
            "settings differ from the ones the episode runner used (" + "; ".join(diff) + "): these SG/RH/AC will not "
            "equal the run's results.json (omit the returns settings to use the recorded ones)"
        )
    if config.e1.classes is not None and e1_eps:
        seen = {
            o.class_id
            for ep in e1_eps
            for st in ep.steps
            if st.frame is not None
            for o in (*st.frame.ground_truth, *st.frame.detections)
        }
        absent = [c for c in config.e1.classes if c not in seen]
        if absent:
            lead = "none of" if len(absent) == len(config.e1.classes) else "some of"
            out.append(
                f"E1 classes: {lead} the classes {', '.join(map(repr, absent))} occur in the logged frames (labels "
                f"seen: {', '.join(sorted(seen)) or 'none'}; matched exactly): objects of other labels never count as "
                "errors"
                + (", so every frame has tau = 0 and SG = RH = 0" if lead == "none of" else "")
            )
    e1 = doc.get("E1")
    if isinstance(e1, Mapping):
        c = e1["counts"]
        m = e1["frames"]
        errors = c["TP"] + c["FN"]
        if errors == 0:
            out.append(f"E1: no frame has a detection error (tau = 0 in all {m['n']} frames): SG = RH = 0")
        else:
            if m["SG"] == 0:
                out.append(f"E1 SG = 0: the monitor raised no alarm on any of the {errors} frames with an error")
            if m["RH"] == 0:
                out.append(f"E1 RH = 0: the monitor alarmed on every one of the {errors} frames with an error")
        if m["AC"] == 0:
            clean = c["FP"] + c["TN"]
            out.append(f"E1 AC = 0: the monitor raised no false alarm (no alarm on the {clean} error-free frames)")
    e2 = doc.get("E2")
    if isinstance(e2, Mapping):
        m = e2["frames"]
        crashes = [(p, mo) for p, mo, _ in aligned.triples if any(s.collision for s in p.steps)]
        if m["SG"] == 0:
            if not crashes:
                out.append(
                    f"E2 SG = 0: the perception rollout f never collides in {len(aligned.triples)} episode(s), so "
                    "there is no accident for the monitor to prevent"
                )
            else:
                why = []
                for p, mo in crashes:
                    hit = _first(p.steps, "collision")
                    alarm = _first(mo.steps, "alarm")
                    when = "never" if alarm is None else f"first at t = {alarm}"
                    also = "collides too" if any(s.collision for s in mo.steps) else "does not"
                    why.append(
                        f"episode {p.episode} ({_condition(p)}): f collides at t = {hit}, f+m {also}; the monitor's "
                        f"alarm: {when}"
                    )
                out.append(
                    "E2 SG = 0: the monitor prevents none of the collisions of f: " + "; ".join(why) + ". The monitor "
                    "does not see this condition (or alarms too late to stop)"
                )
        if m["RH"] == 0:
            out.append("E2 RH = 0: the monitored rollout f+m never collides where ground-truth perception f* does not")
        if m["AC"] == 0:
            out.append("E2 AC = 0: the monitor never stops the car earlier than f alone (no running time lost)")
    return out
