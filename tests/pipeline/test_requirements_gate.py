"""`evaluate --check` on recorded bags: verdicts printed, in results.json and first in the report; exit 3 on FAIL."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import beta, betabinom, binom, norm
from scipy.stats import t as student_t

from perception_safety.cli import main
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.pipeline.evaluate_config import load_evaluate_config

# Two bins keep the report's plots (the bulk of an evaluate run here) small. The fixture has 3 bags (episodes):
# min_clusters 2 lets them be judged; the default (10) makes every rate INCONCLUSIVE.
BASE = (
    "evaluate: {analyses: [confusion]}\n"
    "confusion: {classes: {ped: [pedestrian], obs: [car]}, bin_edges: [0, 50, 100], min_clusters: MIN}\n"
)


def write(tmp_path, name: str, requirements: str, min_clusters: int = 2):
    path = tmp_path / name
    path.write_text(BASE.replace("MIN", str(min_clusters)) + "requirements:\n" + requirements)
    return path


def korn_graubard_lower(y: np.ndarray, m: np.ndarray, alpha: float = 0.05) -> float:
    """Independent reference: the design-effect Clopper-Pearson lower bound from per-episode counts, by formula."""
    n, k = m.sum(), len(m)
    p = y.sum() / n
    v = k / (k - 1) * ((y - p * m) ** 2).sum() / n**2
    deff = max(v / (p * (1 - p) / n), 1.0)
    n_eff = min(n / deff * (norm.ppf(1 - alpha / 2) / student_t.ppf(1 - alpha / 2, k - 1)) ** 2, n)
    return float(beta.ppf(alpha / 2, p * n_eff, (1 - p) * n_eff + 1))


def profile_lower(y: np.ndarray, m: np.ndarray, alpha: float = 0.05) -> float:
    """Independent reference: the beta-binomial profile-likelihood lower end (scipy's pmf, a bounded search over
    the precision θ per mean, the binomial limit θ → ∞, the cut-off t²_{k-1}), by root finding."""

    def profile(mu: float) -> float:
        nll = lambda lt: -float(betabinom.logpmf(y, m, mu * np.exp(lt), (1 - mu) * np.exp(lt)).sum())  # noqa: E731
        res = minimize_scalar(nll, bounds=(np.log(1e-4), np.log(1e6)), method="bounded", options={"xatol": 1e-7})
        return max(-res.fun, float(binom.logpmf(y, m, mu).sum()))

    grid = np.linspace(0.005, 0.995, 199)
    best = max(profile(g) for g in grid)
    mle = grid[int(np.argmax([profile(g) for g in grid]))]
    cut = student_t.ppf(1 - alpha / 2, len(m) - 1) ** 2
    f = lambda mu: 2 * (best - profile(mu)) - cut  # noqa: E731
    return 0.0 if f(1e-6) <= 0 else float(brentq(f, 1e-6, mle, xtol=1e-8))


def test_check_fails_with_exit_3_and_the_report_leads_with_the_verdicts(recorded_bags, tmp_path, capsys):
    root, frames, _ = recorded_bags
    reqs = (
        "  - {metric: recall, class: ped, bound: lower, at_least: 0.1}\n"
        "  - {id: near recall, metric: recall, class: ped, distance: [0, 50], bound: lower, at_least: 0.99}\n"
        "  - {metric: verification, spec: phi, variant: prop, true_env: ped, at_least: 0.5}\n"
    )
    cfg_path = write(tmp_path, "gate.yaml", reqs)
    out = tmp_path / "out"
    code = main(["evaluate", str(root), "--config", str(cfg_path), "--out", str(out), "--check"])
    assert code == 3
    printed = capsys.readouterr().out
    assert "FAIL" in printed and "NOT EVALUATED" in printed and "exit 3" in printed
    block = json.loads((out / "results.json").read_text())["requirements"]
    assert (block["overall"], block["passed"], block["failed"], block["not_evaluated"]) == ("FAIL", 1, 1, 1)
    near = block["items"][1]
    # Independent reference: the ped column of bin [0, 50) counted from each bag's frames (120 each) directly.
    cfg, _ = load_evaluate_config(cfg_path)
    cms = [confusion_from_frames(frames[i : i + 120], cfg.confusion).class_cm[0] for i in (0, 120, 240)]
    y = np.array([cm[0, 0] for cm in cms])
    m = np.array([cm[:, 0].sum() for cm in cms])
    assert near["label"] == "near recall" and near["n"] == m.sum() and near["clusters"] == 3
    # the hull of Korn-Graubard and the beta-binomial profile (docs/confusion-matrices.md): the lower of the two ends
    assert near["value"] == pytest.approx(min(korn_graubard_lower(y, m), profile_lower(y, m)), abs=5e-4)
    assert near["status"] == "FAIL" and block["items"][2]["detail"].startswith("the verification analysis did not run")
    html = (out / "report.html").read_text()
    assert html.index(">Requirements<") < html.index(">Summary<")
    assert "class='card bad'" in html  # the near-range requirement has no card of its own: added, red
    assert "class='card good'" in html  # the pooled recall card, coloured by its requirement
    # Without --check the same verdicts exit 0: tests/pipeline/test_demo.py runs the demo, whose shipped
    # requirements fail, and expects 0.


def test_check_passes_and_bad_selectors_are_config_errors(recorded_bags, tmp_path, capsys):
    root, _, _ = recorded_bags
    few = write(tmp_path, "few.yaml", "  - {metric: recall, class: ped, at_least: 0.1}\n", min_clusters=10)
    assert main(["evaluate", str(root), "--config", str(few), "--out", str(tmp_path / "f"), "--check"]) == 3
    block = json.loads((tmp_path / "f" / "results.json").read_text())["requirements"]
    assert block["overall"] == "INCONCLUSIVE" and block["items"][0]["clusters"] == 3
    assert "INCONCLUSIVE" in capsys.readouterr().out
    ok = write(tmp_path, "ok.yaml", "  - {metric: recall, class: ped, at_least: 0.1}\n")
    assert main(["evaluate", str(root), "--config", str(ok), "--out", str(tmp_path / "o"), "--check"]) == 0
    bad = write(
        tmp_path, "bad.yaml", "  - {metric: recall, class: ped}\n  - {metric: recall, class: pedx, at_least: 0.1}\n"
    )
    assert main(["evaluate", str(root), "--config", str(bad), "--out", str(tmp_path / "b"), "--check"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "requirements.0" in err and "at_least" in err
    bad2 = write(tmp_path, "bad2.yaml", "  - {metric: recall, class: pedx, distance: [0, 25], at_least: 0.1}\n")
    assert main(["evaluate", str(root), "--config", str(bad2), "--out", str(tmp_path / "b"), "--check"]) == 2
    err = capsys.readouterr().err
    assert "bad2.yaml: requirements.0.class: unknown class 'pedx'" in err
    assert "bad2.yaml: requirements.0.distance: unknown bin edge 25" in err
