"""Evaluate step (last): judge the config's requirements on results.json, a verdict table first in the report.

Summary cards that show a required number are coloured (green PASS, red FAIL, yellow NOT EVALUATED); a
requirement without such a card gets its own card, so every verdict is visible in the summary too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from perception_safety.evaluation.requirements import FAIL, INCONCLUSIVE, NOT_EVALUATED, PASS, Verdict, check, summary
from perception_safety.evaluation.requirements.config import (
    BBSLRequirement,
    PCDRequirement,
    RateRequirement,
    RequirementBase,
    ReturnsRequirement,
    VerificationRequirement,
)
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric

_CARD_VERDICT = {PASS: "good", FAIL: "bad", INCONCLUSIVE: "na", NOT_EVALUATED: "na"}


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.4g}"


def card_pattern(req: RequirementBase) -> re.Pattern[str] | None:
    """The label of the summary card an analysis writes for this requirement's number (None: no card)."""
    esc = re.escape
    if isinstance(req, RateRequirement) and req.metric == "recall" and req.distance is None:
        return re.compile(f"recall '{esc(req.class_)}' \\(pooled\\)$")
    one_chain_family = isinstance(req, VerificationRequirement) and req.variant and req.true_env
    if one_chain_family and req.initial_speed is None and not req.max_speed:
        # the card is the worst P over all (V, v0) of one variant and environment; wider requirements get their own
        return re.compile(f"worst P\\({esc(req.spec)} \\| {esc(req.true_env)}\\), {esc(req.variant)}$")
    if isinstance(req, PCDRequirement):
        if req.name == "mpcd":
            return re.compile(f"mPCD '{esc(req.target)}'( \\(|$)")
        if req.y_t is None and req.p_t is None:  # the headline PCD card
            return re.compile(f"PCD '{esc(req.target)}'( \\(|$)")
        return None
    if isinstance(req, ReturnsRequirement) and req.average == "frames" and req.name != "hazard_f":
        return re.compile(f"{req.name.upper()} \\({req.scheme.upper()}, per frame\\)$")
    if isinstance(req, BBSLRequirement) and req.name == "pass_rate":
        stem = req.spec.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return re.compile(f"BBSL pass rate \\({esc(stem)}\\)$")
    return None


def _worse(a: str, b: str) -> str:
    order = {"good": 0, "na": 1, "bad": 2, "": -1}
    return a if order[a] >= order[b] else b


def colour_cards(ev: Evaluation, reqs: Sequence[RequirementBase], verdicts: Sequence[Verdict]) -> None:
    """Set `Metric.verdict` on the cards the requirements refer to; add a card for the others."""
    summary_cards = ev.report.summary
    for req, v in zip(reqs, verdicts, strict=True):
        css = _CARD_VERDICT[v.status]
        pat = card_pattern(req)
        hits = [i for i, m in enumerate(summary_cards) if pat is not None and pat.match(m.label)]
        for i in hits:
            summary_cards[i] = dataclasses.replace(summary_cards[i], verdict=_worse(summary_cards[i].verdict, css))
        if not hits:
            value = v.point if v.point is not None else v.status  # the estimate; the bound it was held to beside it
            held = f"{v.bound} {_fmt(v.value)} {v.op} {v.threshold:g}" if v.value is not None else \
                f"{v.bound} {v.op} {v.threshold:g}"
            summary_cards.append(Metric(v.label, value, "", f"{v.status}: {held}", css))


def _speed(v: Verdict, cfg: EvaluateConfig) -> str:
    """`` (v0 = 3 cells/step = 8 m/s)`` for a verification requirement at one initial speed, when the model's cell
    length and time step are known (``verification.plot.step_s``)."""
    v0, step = v.selectors.get("initial_speed"), cfg.verification.plot.step_s
    if v.metric != "verification" or v0 is None or not step:
        return ""
    return f" (v0 = {v0} cells/step = {v0 * cfg.verification.geometry.cell_length_m / step:.3g} m/s)"


def run_frames(ev: Evaluation) -> int:
    """Frames the run read (all inputs)."""
    return int(ev.results.get("frames", 0))


def run(ev: Evaluation, cfg: EvaluateConfig) -> None:
    reqs = cfg.requirements
    if not reqs:
        return
    verdicts = check(reqs, ev.results, cfg.confusion.alpha, cfg.confusion.min_clusters)
    block = summary(verdicts)
    ev.results["requirements"] = block
    sec = ev.report.section("Requirements")
    ev.report.sections.remove(sec)
    ev.report.lead.append(sec)
    rows = [
        [
            v.status,
            v.label + _speed(v, cfg),
            _fmt(v.point),
            f"[{_fmt(v.lower)}, {_fmt(v.upper)}]",
            f"{v.bound} {v.op} {v.threshold:g}",
            "–" if v.n is None else v.n,
            "–" if v.clusters is None else v.clusters,
            v.detail,
        ]
        for v in verdicts
    ]
    sec.table(
        ["verdict", "requirement", "point", "interval", "required", "n", "episodes", "where"],
        rows,
    )
    sec.text(
        f"Overall: {block['overall']} — {block['passed']} passed, {block['failed']} failed, "
        f"{block['inconclusive']} inconclusive, {block['not_evaluated']} not evaluated. point = the estimate; "
        f"'lower'/'upper' compare that end of the two-sided interval at {100 * (1 - cfg.confusion.alpha):g} % "
        "(rates: cluster-aware with the episode as the unit when the data carry episodes, else Clopper-Pearson) with "
        "the required bound; n = samples behind the number, episodes = its clusters ('–': no cluster information); "
        f"the run read {run_frames(ev)} frames. A number resting on fewer than {cfg.confusion.min_clusters} episodes "
        "is INCONCLUSIVE and one not computed in this run NOT EVALUATED, never PASS; `evaluate --check` exits 3 unless "
        "all pass.",
        "note",
    )
    for v in verdicts:
        if v.status == NOT_EVALUATED:
            ev.warn("requirements", f"{v.label}: not evaluated: {v.detail}", "requirement_not_evaluated")
        elif v.status == INCONCLUSIVE:
            ev.warn("requirements", f"{v.label}: INCONCLUSIVE: {v.detail}", "requirement_inconclusive")
    colour_cards(ev, reqs, verdicts)
