"""SG/RH/AC (eq. 7-9): E1 identities on a hand-built log, E2 against hand-worked values."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.evaluation.returns import (
    E1Config,
    E2Config,
    ReturnsError,
    align,
    binary_counts,
    classification_returns,
    e1_metrics,
    e2_metrics,
    safety_metrics,
)
from perception_safety.io.episode_log import EpisodeLogWriter, EpisodeStep, read_episode_log

PED = Box(100, 100, 140, 200)


def _gt(box: Box = PED) -> GroundTruthObject:
    return GroundTruthObject(box, "person", 20.0)


def _det(box: Box = PED, cls: str = "person", score: float = 0.9) -> Detection:
    return Detection(box, cls, score)


# (frame, alarm, hand label of the frame's error tau, hand label of the monitor outcome)
E1_FRAMES = [
    (Frame(0, (_det(),), (_gt(),)), False, False, "TN"),
    (Frame(1, (_det(), _det(Box(300, 100, 340, 200))), (_gt(),)), True, True, "TP"),  # false positive
    (Frame(2, (), (_gt(),)), False, True, "FN"),  # false negative
    (Frame(3, (_det(),), (_gt(),)), True, False, "FP"),  # false alarm
    (Frame(4, (_det(score=0.3),), (_gt(),)), True, True, "TP"),  # below score threshold: a miss
    (Frame(5, (_det(cls="car"),), (_gt(),)), False, True, "FN"),  # wrong class: FP and FN
    (Frame(6, (), ()), False, False, "TN"),
    # IoU of (100..140) vs (116..156) in x, same y: overlap 24 / union 56 = 0.43 < 0.5
    (Frame(7, (_det(Box(116, 100, 156, 200)),), (_gt(),)), True, True, "TP"),
]


def _write_e1(path: Path) -> None:
    with EpisodeLogWriter(path) as w:
        w.write_episode(
            "e1",
            "perception",
            [EpisodeStep(t, running=True, alarm=a, frame=f) for t, (f, a, _, _) in enumerate(E1_FRAMES)],
        )


def test_e1_identities_on_a_hand_built_log(tmp_path: Path) -> None:
    p = tmp_path / "e1.jsonl"
    _write_e1(p)
    res = e1_metrics(read_episode_log(p), E1Config())
    n = len(E1_FRAMES)
    outcome = [o for *_, o in E1_FRAMES]
    tp, fn, fp = outcome.count("TP"), outcome.count("FN"), outcome.count("FP")
    assert (tp, fn, fp, n) == (3, 2, 1, 8)
    assert res.counts.as_dict() == {"TP": 3, "FP": 1, "FN": 2, "TN": 2}
    assert res.frames.sg == pytest.approx(tp / n)
    assert res.frames.rh == pytest.approx(fn / n)
    assert res.frames.ac == pytest.approx(fp / n)
    errors_of_f = sum(1 for *_, tau, _ in E1_FRAMES if tau)
    assert res.frames.sg + res.frames.rh == pytest.approx(errors_of_f / n)  # eq. 6: the hazard of f
    assert res.frames.hazard_f == pytest.approx(errors_of_f / n)
    assert res.episodes.sg == pytest.approx(res.frames.sg)  # a single episode


def test_e1_matching_rule_is_configurable(tmp_path: Path) -> None:
    p = tmp_path / "e1.jsonl"
    _write_e1(p)
    eps = read_episode_log(p)
    # IoU 0.4 makes frame 7 a match; score 0.2 makes frame 4 a match: two fewer errors of f
    loose = e1_metrics(eps, E1Config(iou_threshold=0.4, score_threshold=0.2))
    assert loose.counts.as_dict() == {"TP": 1, "FP": 3, "FN": 2, "TN": 2}
    # counting only cars: frames 5 (car det, no car gt) is the only error
    cars = e1_metrics(eps, E1Config(classes=("car",)))
    assert cars.counts.as_dict() == {"TP": 0, "FP": 4, "FN": 1, "TN": 3}


def test_classification_form_matches_counts() -> None:
    rng = np.random.default_rng(0)
    tau = rng.random(500) < 0.3
    alarm = rng.random(500) < 0.4
    m = safety_metrics(classification_returns(tau, alarm))
    tp = sum(1 for t, a in zip(tau, alarm, strict=True) if t and a)
    fn = sum(1 for t, a in zip(tau, alarm, strict=True) if t and not a)
    fp = sum(1 for t, a in zip(tau, alarm, strict=True) if a and not t)
    assert (m.sg, m.rh, m.ac) == pytest.approx((tp / 500, fn / 500, fp / 500))
    c = binary_counts(tau, alarm)
    assert (c.tp, c.fn, c.fp, c.n) == (tp, fn, fp, 500)
    # recall = SG / hazard, false-positive rate = AC / (1 - hazard) (paper Section III-A)
    assert m.sg / m.hazard_f == pytest.approx(tp / (tp + fn))
    assert m.ac / (1 - m.hazard_f) == pytest.approx(fp / (fp + c.tn))
    with pytest.raises(ReturnsError, match="0/1"):
        classification_returns([0, 2], [0, 1])
    with pytest.raises(ReturnsError, match="samples"):
        classification_returns([0, 1], [0])


def _rollout(running_until: int | None, horizon: int, collisions: tuple[int, ...] = ()) -> list[EpisodeStep]:
    """Steps of a rollout running up to frame ``running_until`` (inclusive); if it stops, the log ends at
    the first stopped frame (the paper ends the episode when braking stops the car)."""
    steps = []
    for t in range(horizon):
        running = running_until is None or t <= running_until
        steps.append(EpisodeStep(t, running=running, collision=t in collisions))
        if not running:
            break
    return steps


def _write_e2(path: Path) -> None:
    T = 10
    with EpisodeLogWriter(path) as w:
        # A: collision avoided. f hits the pedestrian at t=6 (contact also at 7); the monitor stops
        # the car (stopped from t=4); f* brakes for the real pedestrian (stopped from t=5).
        w.write_episode("A", "perception", _rollout(None, T, (6, 7)), reason="horizon")
        w.write_episode("A", "monitored", _rollout(3, T), reason="stopped")
        w.write_episode("A", "ground_truth", _rollout(4, T), reason="stopped")
        # B: collision not avoided: no alarm, f and (f, m) both hit at t=5; f* stops from t=4.
        w.write_episode("B", "perception", _rollout(None, T, (5,)), reason="horizon")
        w.write_episode("B", "monitored", _rollout(None, T, (5,)), reason="horizon")
        w.write_episode("B", "ground_truth", _rollout(3, T), reason="stopped")
        # C: false alarm: no pedestrian; the monitor stops the car from t=2.
        w.write_episode("C", "perception", _rollout(None, T), reason="horizon")
        w.write_episode("C", "monitored", _rollout(1, T), reason="stopped")
        w.write_episode("C", "ground_truth", _rollout(None, T), reason="horizon")


def test_e2_against_hand_worked_values(tmp_path: Path) -> None:
    p = tmp_path / "e2.jsonl"
    _write_e2(p)
    aligned = align(read_episode_log(p))
    assert [t[0].episode for t in aligned.triples] == ["A", "B", "C"] and not aligned.incomplete
    res = e2_metrics(aligned.triples, E2Config())
    # Frame form, t = 0..8 in each of 3 episodes (27 samples):
    #  A: S_f = -1 for t = 0..5 (first collision at 6) -> sum(S_fm - S_f) = 6; M_fm = 1 for t = 0..2 -> AC sum 9-3 = 6
    #  B: S_f = S_fm = -1 for t = 0..4 -> RH sum 5
    #  C: M_fm = 1 only at t = 0 -> AC sum 9-1 = 8
    assert res.frames.n == 27
    assert Fraction(res.frames.sg).limit_denominator(100) == Fraction(6, 27)
    assert Fraction(res.frames.rh).limit_denominator(100) == Fraction(5, 27)
    assert Fraction(res.frames.ac).limit_denominator(100) == Fraction(14, 27)
    assert res.frames.hazard_f == pytest.approx(11 / 27)
    # Episode form (returns from x_0): A avoided (+1 gain), B not avoided (+1 residual), C false alarm
    # AC = mean over episodes of the lost running fraction of frames 1..9: (6/9 + 0 + 8/9) / 3
    assert res.episodes.n == 3
    assert res.episodes.sg == pytest.approx(1 / 3)
    assert res.episodes.rh == pytest.approx(1 / 3)
    assert res.episodes.ac == pytest.approx((6 / 9 + 8 / 9) / 3)
    a, b, c = res.per_episode
    assert a.collided == {"perception": True, "monitored": False, "ground_truth": False}
    assert b.collided["monitored"] and not c.collided["perception"]
    assert c.running_frames == {"perception": 9, "monitored": 1, "ground_truth": 9}


def test_e2_collision_every_frame_and_fixed_horizon(tmp_path: Path) -> None:
    p = tmp_path / "e2.jsonl"
    _write_e2(p)
    triples = align(read_episode_log(p)).triples
    # counting both contact frames of A: S_f = -2 for t = 0..5 and -1 at t = 6 -> SG sum 13
    every = e2_metrics(triples, E2Config(collision_once=False))
    assert every.frames.sg == pytest.approx(13 / 27)
    assert every.episodes.sg == pytest.approx(2 / 3)
    # horizon 5 (t = 0..3): no collision lies within it; AC sums A 4-3 = 1, C 4-1 = 3 over 12 samples
    short = e2_metrics(triples, E2Config(horizon=5))
    assert short.frames.sg == 0.0 and short.frames.rh == 0.0
    assert short.frames.ac == pytest.approx(4 / 12)


def test_alignment_reports_missing_and_rejects_duplicates(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    with EpisodeLogWriter(p) as w:
        w.write_episode("A", "perception", _rollout(None, 3))
        w.write_episode("A", "monitored", _rollout(None, 3))
    al = align(read_episode_log(p))
    assert al.triples == () and al.incomplete == ("episode A: missing rollout(s) ground_truth",)
    with pytest.raises(ReturnsError, match="needs at least one scenario"):
        e2_metrics(al.triples)
    with pytest.raises(ReturnsError, match="appears twice"):
        align(read_episode_log(p) + read_episode_log(p))


def test_e2_horizon_comes_from_the_episode_meta(tmp_path: Path) -> None:
    # scenario A of the hand-built log, declared T = 20 in the begin meta (the runner's 'frames' key)
    p = tmp_path / "e2.jsonl"
    with EpisodeLogWriter(p) as w:
        w.write_episode("A", "perception", _rollout(None, 10, (6,)), meta={"frames": 20})
        w.write_episode("A", "monitored", _rollout(3, 10), meta={"frames": 20})
        w.write_episode("A", "ground_truth", _rollout(4, 10), meta={"frames": 20})
    res = e2_metrics(align(read_episode_log(p)).triples)
    (ep,) = res.per_episode
    assert ep.horizon == 20 and res.frames.n == 19
    # after its last logged frame (t = 9) the perception rollout counts as stopped: M_f = 1 for t = 0..8,
    # M_fm = 1 for t = 0..2 -> AC = 6 / 19; SG = 6 / 19 (S_f = -1 for t = 0..5)
    assert res.frames.ac == pytest.approx(6 / 19) and res.frames.sg == pytest.approx(6 / 19)
    assert e2_metrics(align(read_episode_log(p)).triples, E2Config(horizon=10)).frames.n == 9
