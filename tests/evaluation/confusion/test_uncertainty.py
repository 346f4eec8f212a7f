"""Intervals on every P(pred | true) entry, recall and precision, and thin-column flags, against hand counts.

Reference intervals come from `scipy.stats.binomtest(...).proportion_ci(method="exact")` (an independent
Clopper-Pearson implementation) and the binomial tail equations, never from the code under test.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from perception_safety.cli import main
from perception_safety.evaluation.confusion.accumulate import confusion_from_frames
from perception_safety.evaluation.confusion.io import load_matrices, to_json_dict, write_csv
from perception_safety.evaluation.confusion.metrics import class_metrics
from perception_safety.evaluation.confusion.uncertainty import entry_intervals, thin_column_messages, thin_columns
from perception_safety.io.dataset import write_jsonl_frames

from .test_accumulate import CFG, hand_scene
from .test_confusion_cli import REFERENCE


def exact(k: int, n: int, alpha: float) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return ci.low, ci.high


def test_entry_intervals_match_an_independent_clopper_pearson() -> None:
    # Columns: true ped 7 objects (5 found, 1 confused, 1 missed); obs 0 objects; empty 4 cells.
    cm = np.array([[5, 0, 0], [1, 0, 0], [1, 0, 4]])
    lo, hi = entry_intervals(cm, 0.1)
    for i, k in enumerate((5, 1, 1)):
        assert (lo[i, 0], hi[i, 0]) == pytest.approx(exact(k, 7, 0.1), abs=1e-9)
    assert lo[:, 1].tolist() == [0.0] * 3 and hi[:, 1].tolist() == [1.0] * 3  # no samples: vacuous
    assert (lo[2, 2], hi[2, 2]) == (pytest.approx(exact(4, 4, 0.1)[0]), 1.0)
    stacked_lo, _ = entry_intervals(np.stack([cm, cm]), 0.1)
    assert np.array_equal(stacked_lo[1], lo)


def test_reference_bin0_ped_given_ped_is_31_of_158() -> None:
    dc = load_matrices(REFERENCE)
    cm = dc.class_cm[0]
    i = dc.label_index("class", "ped")
    assert (int(cm[i, i]), int(cm[:, i].sum())) == (31, 158)
    alpha = 0.05 / 3
    lo, hi = entry_intervals(cm, alpha)
    assert binom.sf(30, 158, lo[i, i]) == pytest.approx(alpha / 2, abs=1e-9)  # P(X >= 31 | lower)
    assert binom.cdf(31, 158, hi[i, i]) == pytest.approx(alpha / 2, abs=1e-9)  # P(X <= 31 | upper)


def test_recall_and_precision_intervals_and_thin_flags() -> None:
    rows = {(r.bin, r.label): r for r in class_metrics(confusion_from_frames(hand_scene(), CFG), 0.05, 3)}
    pp = rows[("pooled", "ped")]  # 2 of 3 ped found; 2 of 3 matched ped predictions right, + 1 unmatched
    assert (pp.recall_lower, pp.recall_upper) == pytest.approx(exact(2, 3, 0.05))
    assert (pp.precision_lower, pp.precision_upper) == pytest.approx(exact(2, 4, 0.05))
    assert (pp.precision_matched_only_lower, pp.precision_matched_only_upper) == pytest.approx(exact(2, 3, 0.05))
    assert not pp.thin
    obs1 = rows[("1", "obs")]  # 1 of 2: thin at min_samples 3
    assert (obs1.recall_lower, obs1.recall_upper) == pytest.approx(exact(1, 2, 0.05)) and obs1.thin
    ped1 = rows[("1", "ped")]  # no ped in bin 1: no rate, no interval, not "thin" (nothing estimated)
    assert (ped1.recall, ped1.recall_lower, ped1.recall_upper, ped1.thin) == (None, None, None, False)
    obs0 = rows[("0", "obs")]  # recall 0 of 1, precision undefined
    assert obs0.recall_lower == 0.0 and obs0.precision_lower is None


def test_thin_columns_name_every_column_below_min_samples() -> None:
    dc = confusion_from_frames(hand_scene(), CFG)
    thin = thin_columns(dc, 3)
    # Class columns per bin by hand: bin 0 ped 1, obs 1, empty 2; bin 1 ped 0, obs 2, empty 1;
    # bin 2 ped 2, obs 0, empty 2; pooled ped 3, obs 3, empty 1.
    cls = {(c.bin, c.label): c.n for c in thin if c.matrix == "class"}
    assert cls == {
        ("0", "ped"): 1, ("0", "obs"): 1, ("0", "empty"): 2,
        ("1", "ped"): 0, ("1", "obs"): 2, ("1", "empty"): 1,
        ("2", "ped"): 2, ("2", "obs"): 0, ("2", "empty"): 2,
        ("pooled", "empty"): 1,
    }  # fmt: skip
    msgs = thin_column_messages(thin, 3)
    assert len(msgs) == 2 and "10 column(s) with fewer than 3 samples" in msgs[0]
    assert "ped in [10, 20) (n = 0)" in msgs[0]
    assert thin_columns(dc, 1) == [c for c in thin if c.n == 0]


def test_json_and_csv_carry_the_entry_intervals(tmp_path: Path) -> None:
    dc = confusion_from_frames(hand_scene(), CFG)
    doc = to_json_dict(dc, alpha=0.2)
    assert doc["alpha"] == 0.2
    # bin 1, column obs: 1 of 2 predicted obs, 1 of 2 missed
    assert (doc["class_p_lower"][1][1][1], doc["class_p_upper"][1][1][1]) == pytest.approx(exact(1, 2, 0.2))
    assert (doc["class_p_pooled_lower"][0][0], doc["class_p_pooled_upper"][0][0]) == pytest.approx(exact(2, 3, 0.2))
    rows = list(csv.DictReader(write_csv(tmp_path / "c.csv", dc, alpha=0.2).open()))
    cell = next(r for r in rows if (r["matrix"], r["bin"], r["pred"], r["true"]) == ("class", "1", "obs", "obs"))
    assert cell["column_n"] == "2"
    assert (float(cell["p_lower"]), float(cell["p_upper"])) == pytest.approx(exact(1, 2, 0.2))


def test_confusion_command_writes_and_prints_the_warnings(tmp_path: Path, capsys) -> None:
    data = tmp_path / "scene.jsonl"
    write_jsonl_frames(data, hand_scene())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "confusion:\n  classes: {ped: [ped], obs: [obs]}\n  bin_edges: [0, 10, 20, 30]\n  alpha: 0.1\n"
        "  min_samples: 3\n  plots: false\n"
    )
    out = tmp_path / "out"
    assert main(["confusion", str(data), "--config", str(cfg), "--out", str(out)]) == 0
    doc = json.loads((out / "confusion.json").read_text())
    assert doc["alpha"] == 0.1 and doc["min_samples"] == 3
    # class: the 10 columns above; prop: each bin (and pooled) holds the 3 frames in at least 2 columns,
    # so all 4 x 4 columns are below 3
    assert len(doc["thin_columns"]) == 10 + 16
    assert sum(c["matrix"] == "prop" for c in doc["thin_columns"]) == 16
    # 2 thin-column lines, the frames taken as independent (a JSON Lines file without episodes), the
    # unmatched detections that count in the pooled precision only, and the unmapped labels (issue 23 item 4)
    assert len(doc["warnings"]) == 6
    assert doc["warnings"][2].startswith("sampling unit: the input carries no episode information")
    assert "2 detection(s) match no annotated object" in doc["warnings"][3]
    assert "1 ground-truth label(s) map to no evaluation class and are left out: tree (1)" in doc["warnings"][4]
    assert "1 detection label(s) map to no evaluation class and are left out: traffic light (1)" in doc["warnings"][5]
    captured = capsys.readouterr()
    assert "warning: class-labeled matrix: 10 column(s)" in captured.err
    assert "0.667 [" in captured.out  # pooled ped recall with its interval
    m = {(r["bin"], r["label"]): r for r in csv.DictReader((out / "confusion_metrics.csv").open())}
    assert float(m[("pooled", "ped")]["recall_lower"]) == pytest.approx(exact(2, 3, 0.1)[0])
