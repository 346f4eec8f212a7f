"""Safety Gain, Residual Hazard and Availability Cost of a runtime monitor (Guerin et al., SG/RH/AC paper).

Estimates (eq. 7-9) over n samples of the safety returns ``S`` and mission returns ``M`` of three
systems, the perception ``f``, the monitored ``(f, m_f)`` and the ground truth ``f*``::

    SG = mean(S_fm - S_f)     RH = mean(S_f* - S_fm)     AC = mean(M_f - M_fm)

and SG + RH = mean(S_f* - S_f), the hazard of ``f`` (eq. 6). Return functions provided:

* classification form (eq. 10-13, and eq. 14-15 for object detection, scheme E1 "detect ML errors"):
  per sample an error/threat label tau and the monitor's alarm;
* scheme E2 "prevent accidents" (eq. 16-17) from three aligned rollouts of one scenario: mission
  reward 1 running / 0 stopped (the episode is over once braking stops the car), safety reward -1
  on collision frames, safety return summed over the future.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from perception_safety.core.episode import Episode
from perception_safety.core.matching import match_boxes
from perception_safety.core.types import Frame
from perception_safety.errors import PerceptionSafetyError


class ReturnsError(PerceptionSafetyError):
    """Inputs to the SG/RH/AC computation are inconsistent (missing rollouts, missing frames, bad labels)."""


# ---------------------------------------------------------------- config


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class E1Config(_Strict):
    """The matching rule that decides tau (eq. 14-15): an error is any false positive or false negative."""

    iou_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    score_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    class_aware: bool = True
    classes: tuple[str, ...] | None = Field(default=None, description="only these classes count; None = all")
    rollout: str = Field(default="perception", description="rollout whose frames and alarms E1 is computed on")


class E2Config(_Strict):
    """Scheme E2 options (eq. 16-17)."""

    horizon: int | None = Field(
        default=None,
        ge=2,
        description="T; None = 'horizon' (or 'frames') of the episode meta, else the longest rollout",
    )
    collision_once: bool = Field(default=True, description="only the first collision frame of a rollout counts")


class ReturnsConfig(_Strict):
    """The ``returns`` section of ``config/monitors.yaml``."""

    e1: E1Config = E1Config()
    e2: E2Config = E2Config()


# ---------------------------------------------------------------- eq. 7-9


@dataclass(frozen=True)
class Returns:
    """Per-sample safety (S) and mission (M) returns of f, (f, m_f) and f*; all arrays of one length n."""

    safety_f: np.ndarray
    safety_fm: np.ndarray
    safety_gt: np.ndarray
    mission_f: np.ndarray
    mission_fm: np.ndarray
    mission_gt: np.ndarray

    def __post_init__(self) -> None:
        n = {a.shape for a in self.arrays()}
        if len(n) != 1 or len(next(iter(n))) != 1:
            raise ReturnsError(f"returns: the six return arrays must be 1-D of equal length, got shapes {sorted(n)}")

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.safety_f, self.safety_fm, self.safety_gt, self.mission_f, self.mission_fm, self.mission_gt)

    def __len__(self) -> int:
        return int(self.safety_f.shape[0])

    @staticmethod
    def concatenate(parts: Sequence[Returns]) -> Returns:
        if not parts:
            return Returns(*(np.zeros(0) for _ in range(6)))
        cols = list(zip(*(p.arrays() for p in parts), strict=True))
        return Returns(*(np.concatenate(c).astype(np.float64) for c in cols))


@dataclass(frozen=True)
class SafetyMetrics:
    """SG, RH, AC (eq. 7-9), the hazard of f (SG + RH, eq. 6) and the number of samples averaged."""

    sg: float
    rh: float
    ac: float
    hazard_f: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"SG": self.sg, "RH": self.rh, "AC": self.ac, "hazard_f": self.hazard_f, "n": self.n}


def safety_metrics(r: Returns) -> SafetyMetrics:
    """Eq. 7-9: sample means of S_fm - S_f, S_f* - S_fm and M_f - M_fm."""
    n = len(r)
    if n == 0:
        raise ReturnsError("returns: no samples to average")
    sg = float(np.mean(r.safety_fm - r.safety_f))
    rh = float(np.mean(r.safety_gt - r.safety_fm))
    ac = float(np.mean(r.mission_f - r.mission_fm))
    hazard = float(np.mean(r.safety_gt - r.safety_f))
    return SafetyMetrics(sg, rh, ac, hazard, n)


def mean_metrics(per_group: Sequence[SafetyMetrics]) -> SafetyMetrics:
    """Unweighted mean of per-group metrics (per-episode averaging); ``n`` is the number of groups."""
    if not per_group:
        raise ReturnsError("returns: no episodes to average")
    a = np.array([[m.sg, m.rh, m.ac, m.hazard_f] for m in per_group], dtype=np.float64).mean(axis=0)
    return SafetyMetrics(float(a[0]), float(a[1]), float(a[2]), float(a[3]), len(per_group))


# ---------------------------------------------------------------- eq. 10-15 (classification form, E1)


@dataclass(frozen=True)
class BinaryCounts:
    """The monitor as a binary detector of tau: TP = alarm on error, FN = missed error, FP = false alarm."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def as_dict(self) -> dict[str, int]:
        return {"TP": self.tp, "FP": self.fp, "FN": self.fn, "TN": self.tn}


def _bool_array(values: Iterable[bool] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ReturnsError(f"returns: {what} must be a 1-D sequence of booleans")
    if arr.dtype != bool:
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ReturnsError(f"returns: {what} must contain only 0/1 or booleans")
        arr = arr.astype(bool)
    return arr


def classification_returns(tau: Iterable[bool] | np.ndarray, alarm: Iterable[bool] | np.ndarray) -> Returns:
    """Eq. 10-13 (and 14-15): S_fm = 0 iff tau and no alarm, M_fm = 0 iff alarm without tau.

    The unmonitored f is the null monitor (never alarms): S_f = 1 - tau, M_f = 1; f* never errs: S = M = 1.
    """
    t = _bool_array(tau, "tau")
    a = _bool_array(alarm, "alarm")
    if t.shape != a.shape:
        raise ReturnsError(f"returns: tau has {t.size} samples but alarm has {a.size}")
    one = np.ones(t.size)
    return Returns(
        safety_f=(~t).astype(np.float64),
        safety_fm=(~(t & ~a)).astype(np.float64),
        safety_gt=one,
        mission_f=one.copy(),
        mission_fm=(~(~t & a)).astype(np.float64),
        mission_gt=one.copy(),
    )


def binary_counts(tau: Iterable[bool] | np.ndarray, alarm: Iterable[bool] | np.ndarray) -> BinaryCounts:
    """Confusion counts of the monitor as a detector of tau."""
    t = _bool_array(tau, "tau")
    a = _bool_array(alarm, "alarm")
    return BinaryCounts(int(np.sum(t & a)), int(np.sum(~t & a)), int(np.sum(t & ~a)), int(np.sum(~t & ~a)))


def frame_has_error(frame: Frame, rule: E1Config) -> bool:
    """tau of eq. 14: True when the frame has a false positive or a false negative under ``rule``."""
    dets = [d for d in frame.detections if d.score >= rule.score_threshold]
    gts = list(frame.ground_truth)
    if rule.classes is not None:
        keep = set(rule.classes)
        dets = [d for d in dets if d.class_id in keep]
        gts = [g for g in gts if g.class_id in keep]
    if not dets and not gts:
        return False
    if not dets or not gts:
        return True
    m = match_boxes(
        np.array([d.box.as_tuple() for d in dets], dtype=np.float64),
        np.array([g.box.as_tuple() for g in gts], dtype=np.float64),
        rule.iou_threshold,
        [d.class_id for d in dets],
        [g.class_id for g in gts],
        rule.class_aware,
    )
    return m.det_indices.size < len(dets) or m.gt_indices.size < len(gts)


@dataclass(frozen=True)
class E1Result:
    """Scheme E1 over frames: metrics averaged over all frames and per episode, and the binary counts."""

    frames: SafetyMetrics
    episodes: SafetyMetrics
    counts: BinaryCounts
    per_episode: Mapping[str, SafetyMetrics] = field(default_factory=dict)


def e1_episode(episode: Episode, rule: E1Config) -> tuple[np.ndarray, np.ndarray]:
    """tau and alarm per frame of one rollout; every step must carry its frame."""
    tau, alarm = [], []
    for s in episode.steps:
        if s.frame is None:
            raise ReturnsError(
                f"{episode.source}: episode {episode.episode} ({episode.rollout}) t={s.t}: "
                "E1 needs the frame (detections and ground truth) in every step"
            )
        tau.append(frame_has_error(s.frame, rule))
        alarm.append(s.alarm)
    return np.array(tau, dtype=bool), np.array(alarm, dtype=bool)


def e1_metrics(episodes: Sequence[Episode], rule: E1Config) -> E1Result:
    """E1 (eq. 14-15) over the given rollouts: frame-averaged, per-episode-averaged, and counts."""
    parts, per, taus, alarms = [], {}, [], []
    for ep in episodes:
        if not ep.steps:
            continue
        tau, alarm = e1_episode(ep, rule)
        r = classification_returns(tau, alarm)
        parts.append(r)
        per[ep.episode] = safety_metrics(r)
        taus.append(tau)
        alarms.append(alarm)
    if not parts:
        raise ReturnsError("returns: E1 found no frames in the selected rollouts")
    counts = binary_counts(np.concatenate(taus), np.concatenate(alarms))
    return E1Result(safety_metrics(Returns.concatenate(parts)), mean_metrics(list(per.values())), counts, per)


# ---------------------------------------------------------------- eq. 16-17 (E2)

Rollout = Literal["perception", "monitored", "ground_truth"]


@dataclass(frozen=True)
class E2Episode:
    """E2 returns of one scenario: per-frame returns (t = 0..T-2) and the per-episode returns from x_0."""

    episode: str
    horizon: int
    frames: Returns
    episode_returns: Returns
    collided: Mapping[str, bool]
    running_frames: Mapping[str, int]


def _padded(ep: Episode, horizon: int, collision_once: bool) -> tuple[np.ndarray, np.ndarray]:
    """running and collision indicators over t = 0..T-1; after the rollout ends the car is stopped."""
    running = np.zeros(horizon, dtype=bool)
    collision = np.zeros(horizon, dtype=bool)
    for s in ep.steps:
        if s.t >= horizon:
            break
        if s.t < 0:
            raise ReturnsError(f"{ep.source}: episode {ep.episode} ({ep.rollout}): negative t={s.t}")
        running[s.t] = s.running
        collision[s.t] = s.collision
    ts = [s.t for s in ep.steps if 0 <= s.t < horizon]
    if ts and ts != list(range(len(ts))):
        missing = sorted(set(range(ts[-1] + 1)) - set(ts))[:5]
        raise ReturnsError(f"{ep.source}: episode {ep.episode} ({ep.rollout}): frames missing at t={missing}")
    if collision_once and collision.any():
        first = int(np.argmax(collision))
        collision[:] = False
        collision[first] = True
    return running, collision


def e2_rollout_returns(running: np.ndarray, collision: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 16-17 for t = 0..T-2: M(x_t) = r_M(z_{t+1}); S(x_t) = sum_{k>t} r_S(z_k) with r_S = -1 on collisions."""
    r_m = running.astype(np.float64)
    r_s = -collision.astype(np.float64)
    future_s = np.cumsum(r_s[::-1])[::-1]  # future_s[k] = sum_{j>=k} r_s[j]
    return r_m[1:], future_s[1:]


HORIZON_META_KEYS = ("horizon", "frames")


def _logged_horizon(rollouts: Iterable[Episode]) -> int:
    """T of a scenario: the largest ``horizon`` (or ``frames``) integer in the rollouts' begin meta,
    else the length of the longest rollout."""
    eps = list(rollouts)
    longest = max(max((s.t for s in ep.steps), default=-1) + 1 for ep in eps)
    declared = []
    for ep in eps:
        for key in HORIZON_META_KEYS:
            v = ep.meta.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                declared.append(v)
                break
    return max([longest, *declared])


def e2_episode(
    perception: Episode, monitored: Episode, ground_truth: Episode, config: E2Config | None = None
) -> E2Episode:
    """E2 returns of one scenario's three aligned rollouts.

    Frame form: eq. 16-17 at every t = 0..T-2 (T = horizon). Episode form: the returns from x_0,
    S = sum_{k=1}^{T-1} r_S(z_k) (-1 when the rollout collides) and M = mean_{k=1}^{T-1} r_M(z_k)
    (the fraction of frames running), so that AC is the mean loss of running time (paper Table II).
    """
    config = config or E2Config()
    rollouts = {"perception": perception, "monitored": monitored, "ground_truth": ground_truth}
    horizon = config.horizon or _logged_horizon(rollouts.values())
    if horizon < 2:
        raise ReturnsError(f"episode {perception.episode}: E2 needs at least 2 frames, got horizon {horizon}")
    frame_cols, ep_cols, collided, running_frames = {}, {}, {}, {}
    for name, ep in rollouts.items():
        running, collision = _padded(ep, horizon, config.collision_once)
        m, s = e2_rollout_returns(running, collision)
        frame_cols[name] = (s, m)
        ep_cols[name] = (np.array([s[0]]), np.array([float(np.mean(running[1:]))]))
        collided[name] = bool(collision[1:].any())
        running_frames[name] = int(running[1:].sum())

    def build(cols: dict[str, tuple[np.ndarray, np.ndarray]]) -> Returns:
        return Returns(
            safety_f=cols["perception"][0],
            safety_fm=cols["monitored"][0],
            safety_gt=cols["ground_truth"][0],
            mission_f=cols["perception"][1],
            mission_fm=cols["monitored"][1],
            mission_gt=cols["ground_truth"][1],
        )

    return E2Episode(perception.episode, horizon, build(frame_cols), build(ep_cols), collided, running_frames)


@dataclass(frozen=True)
class E2Result:
    """Scheme E2: metrics over all frames (eq. 7-9 with eq. 16-17) and over episodes (returns from x_0)."""

    frames: SafetyMetrics
    episodes: SafetyMetrics
    per_episode: tuple[E2Episode, ...]


def e2_metrics(triples: Sequence[tuple[Episode, Episode, Episode]], config: E2Config | None = None) -> E2Result:
    """E2 over scenarios given as ``(perception, monitored, ground_truth)`` rollouts."""
    per = tuple(e2_episode(p, m, g, config) for p, m, g in triples)
    if not per:
        raise ReturnsError("returns: E2 needs at least one scenario with all three rollouts")
    frames = safety_metrics(Returns.concatenate([e.frames for e in per]))
    episodes = safety_metrics(Returns.concatenate([e.episode_returns for e in per]))
    return E2Result(frames, episodes, per)


# ---------------------------------------------------------------- alignment


@dataclass(frozen=True)
class Aligned:
    """Rollouts grouped by scenario id: complete triples and what could not be aligned."""

    triples: tuple[tuple[Episode, Episode, Episode], ...]
    by_rollout: Mapping[str, tuple[Episode, ...]]
    incomplete: tuple[str, ...]


def align(episodes: Iterable[Episode]) -> Aligned:
    """Group rollouts by episode id; a duplicate (episode, rollout) is an error naming both sources."""
    seen: dict[tuple[str, str], Episode] = {}
    for ep in episodes:
        key = (ep.episode, ep.rollout)
        if key in seen:
            raise ReturnsError(
                f"episode {ep.episode} rollout {ep.rollout} appears twice ({seen[key].source} and {ep.source})"
            )
        seen[key] = ep
    ids = list(dict.fromkeys(e for e, _ in seen))
    triples, incomplete = [], []
    names = ("perception", "monitored", "ground_truth")
    for i in ids:
        have = [seen.get((i, r)) for r in names]
        if all(h is not None for h in have):
            triples.append(tuple(have))
        else:
            missing = [r for r, h in zip(names, have, strict=True) if h is None]
            incomplete.append(f"episode {i}: missing rollout(s) {', '.join(missing)}")
    by_rollout: dict[str, list[Episode]] = {}
    for (_, r), ep in seen.items():
        by_rollout.setdefault(r, []).append(ep)
    return Aligned(
        tuple(triples),  # type: ignore[arg-type]
        {k: tuple(v) for k, v in by_rollout.items()},
        tuple(incomplete),
    )


# ---------------------------------------------------------------- report


def returns_report(episodes: Sequence[Episode], config: ReturnsConfig | None = None) -> dict[str, object]:
    """E1 and E2 results of a set of logged rollouts as a JSON-ready mapping (what ``returns --out`` writes).

    E1 is computed on the ``config.e1.rollout`` rollouts (skipped with a note when there are none);
    E2 on every scenario that has all three rollouts (skipped with a note when there is none).
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
        out["E1"] = {
            "frames": e1.frames.as_dict(),
            "episodes": e1.episodes.as_dict(),
            "counts": e1.counts.as_dict(),
            "per_episode": {k: v.as_dict() for k, v in e1.per_episode.items()},
        }
    else:
        out["notes"].append(f"E1 skipped: no rollout named {config.e1.rollout!r}")  # type: ignore[union-attr]
    if aligned.triples:
        e2 = e2_metrics(aligned.triples, config.e2)
        out["E2"] = {
            "frames": e2.frames.as_dict(),
            "episodes": e2.episodes.as_dict(),
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
