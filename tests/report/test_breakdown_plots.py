"""Small multiples by condition: one panel per value with its n, "not computed" panels saying why, bars with n/a."""

from __future__ import annotations

import numpy as np

from perception_safety.evaluation.confusion.metrics import class_metrics
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.pcd.compute import compute_pcd
from perception_safety.report.breakdown_plots import pcd_small_multiples, recall_small_multiples, returns_bars

SVG = "{http://www.w3.org/2000/svg}"


def matrices(ped_hits: int, ped_missed: int) -> DistanceConfusion:
    cm = np.array([[[ped_hits, 0], [ped_missed, 3]], [[0, 0], [0, 1]]])
    return DistanceConfusion(bin_edges=((0, 10), (10, 20)), class_labels=("ped", "empty"),
                             prop_labels=("ped", "empty"), class_cm=cm, prop_cm=cm,
                             class_cm_pooled=cm.sum(axis=0), prop_cm_pooled=cm.sum(axis=0))


def test_recall_panels_carry_their_value_and_n_and_an_empty_value_says_so(tmp_path, parse_svg, svg_texts):
    per_value = {"clear": class_metrics(matrices(6, 2), 0.05, 5), "fog <dense>": class_metrics(matrices(0, 0), 0.05, 5)}
    root = parse_svg(recall_small_multiples(per_value, "weather", tmp_path / "r.svg"))
    texts = svg_texts(root)
    assert "clear (n = 8 objects)" in texts
    assert "fog <dense> (n = 0 objects)" in texts  # escaped in the file, read back as written
    assert any(t.startswith("not computed: no ground-truth object") for t in texts)
    assert "Recall vs distance by weather (error bars: 95 % Clopper-Pearson)" in texts
    assert "recall 'ped' 0.75 (n = 8)" in root.find(f"{SVG}desc").text


def test_pcd_panels_and_the_reason_a_value_has_none(tmp_path, parse_svg, svg_texts):
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 60, 300))
    res = compute_pcd(x, np.clip(0.9 - 0.01 * x + rng.normal(0, 0.05, x.size), 0, 1))
    root = parse_svg(pcd_small_multiples({"day": res, "night": "no sample of this target"}, "light", "ped",
                                         tmp_path / "p.svg"))
    texts = svg_texts(root)
    assert f"day: PCD {res.pcd:.1f} m, n = 300" in texts and "night" in texts
    assert any(t.startswith("not computed: no sample of this") for t in texts)
    assert texts.count(f"PCD (p_t = {res.p_t:g})") == 1 and texts.count("score model mean") == 1  # one legend


def test_returns_bars_mark_missing_values(tmp_path, parse_svg, svg_texts):
    per_value = {"none": {"E1": {"SG": 0.2, "RH": 0.1, "AC": 0.3}}, "rain": {"E1": {"SG": 0.4, "AC": 0.1}}}
    root = parse_svg(returns_bars(per_value, "perturbation", tmp_path / "b.svg"))
    texts = svg_texts(root)
    assert texts.count("n/a") == 1 and {"SG", "RH", "AC", "none", "rain"} <= set(texts)
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("clip-path")]
    heights = sorted(float(r.get("height")) for r in bars)
    assert len(bars) == 5 and abs(heights[-1] / heights[0] - 4.0) < 0.02  # 0.4 vs 0.1
    empty = parse_svg(returns_bars({}, "perturbation", tmp_path / "e.svg"))
    assert any(t.startswith("not computed") for t in svg_texts(empty))


def test_non_finite_data_give_a_named_message_not_a_broken_file(tmp_path, parse_svg, svg_texts):
    import dataclasses

    per_value = {"none": {"E1": {"SG": float("nan"), "RH": float("inf"), "AC": float("nan")}}}
    texts = svg_texts(parse_svg(returns_bars(per_value, "perturbation", tmp_path / "nan.svg")))
    assert texts.count("n/a") == 3 and "E1, averaged over frames" in texts  # each bar says it has no value
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 60, 200))
    res = compute_pcd(x, np.clip(0.9 - 0.01 * x + rng.normal(0, 0.05, x.size), 0, 1))
    broken = dataclasses.replace(res, x=np.full(x.size, np.nan), pcd=float("nan"), interval=None)
    root = parse_svg(pcd_small_multiples({"good": res, "broken": broken}, "light", "ped", tmp_path / "p.svg"))
    notes = [t.replace("\n", " ") for t in svg_texts(root)]
    assert "not drawn: PCD fit (distance): no finite value to draw (empty, NaN or inf data)" in notes
    assert f"good: PCD {res.pcd:.1f} m, n = 200" in svg_texts(root)
