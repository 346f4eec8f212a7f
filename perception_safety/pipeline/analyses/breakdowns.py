"""Evaluate step: per-condition tables and small multiples (``evaluate.breakdowns``, pipeline.breakdowns).

For each attribute: one row per value with frames, recall per class (Clopper-Pearson interval) and PCD per
target; recall-vs-distance and PCD small multiples. SG/RH/AC per condition are in the returns step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perception_safety.evaluation.confusion.metrics import class_metrics
from perception_safety.evaluation.pcd.compute import PCDError, PCDResult, compute_pcd
from perception_safety.pipeline.analyses.base import Evaluation, pct
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.safe_io import write_text


def _recall_cell(m: Any) -> str:
    if m is None or m.recall is None:
        return "n/a (no object)"
    ci = f" [{100 * m.recall_lower:.1f}, {100 * m.recall_upper:.1f}]" if m.recall_lower is not None else ""
    return f"{pct(m.recall)}{ci} (n = {m.ground_truth})"


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.breakdown_plots import pcd_small_multiples, recall_small_multiples

    d = out / "breakdowns"
    d.mkdir(parents=True, exist_ok=True)
    alpha = cfg.confusion.alpha
    doc: dict[str, Any] = {}
    for attr, groups in red.breakdowns.items():
        sec = ev.report.section(f"Breakdown by {attr}")
        sec.text(
            f"The confusion and PCD analyses on the frames of each value of '{attr}' "
            + {
                "ego_speed_band": f"(ego speed bands {cfg.evaluate.speed_bands_mps} m/s, per frame).",
                "object_size_band": f"(box height bands {cfg.evaluate.size_bands_px} px, per object: ground truth, "
                "detections and candidates of that height only, COCO-style ranges).",
            }.get(
                attr,
                "(a condition of the whole bag: metadata custom_data perception_safety.<name> or conditions.yaml).",
            )
            + f" Recall with its {100 * (1 - alpha):g} % Clopper-Pearson interval and the number of objects n."
        )
        if set(groups) == {"unknown"}:
            ev.warn(
                "breakdowns",
                f"breakdown '{attr}': no input carries this attribute, every frame is 'unknown' (add it to the bags' "
                "metadata custom_data as perception_safety.<name> or to a conditions.yaml beside metadata.yaml)",
                "breakdown_unknown",
            )
        metrics_by_value: dict[str, list[Any]] = {}
        pcd_by_target: dict[str, dict[str, PCDResult | str]] = {t.name: {} for t in cfg.evaluate.pcd_targets}
        rows, attr_doc = [], {}
        classes: list[str] = []
        for value, g in groups.items():
            entry: dict[str, Any] = {"bags": len(g.bags), "frames": g.frames}
            dc = g.confusion()
            pooled: dict[str, Any] = {}
            if dc is not None:
                metrics = class_metrics(dc, alpha, cfg.confusion.min_samples, precision=False)  # recall shown only
                metrics_by_value[value] = metrics
                pooled = {m.label: m for m in metrics if m.bin == "pooled" and m.label != dc.empty_label}
                classes = classes or list(pooled)
                entry["recall"] = {
                    c: {"recall": m.recall, "lower": m.recall_lower, "upper": m.recall_upper, "n": m.ground_truth}
                    for c, m in pooled.items()
                }
            entry["pcd"] = {}
            for name, (x, y, _missed) in g.samples().items():
                if x.size == 0:
                    why = "no sample of this target"
                    pcd_by_target[name][value] = why
                    entry["pcd"][name] = {"error": why, "n": 0}
                    continue
                try:
                    res = compute_pcd(x, y, cfg.pcd, what=f"PCD '{name}' ({attr} = {value})")
                except PCDError as exc:
                    pcd_by_target[name][value] = str(exc)
                    entry["pcd"][name] = {"error": str(exc), "n": int(x.size)}
                    continue
                pcd_by_target[name][value] = res
                entry["pcd"][name] = {"pcd": res.pcd, "mpcd": res.mpcd, "n": int(x.size)}
            attr_doc[value] = entry
            pcd_cells = [
                f"{p['pcd']:.2f} / {p['mpcd']:.2f} (n = {p['n']})" if "pcd" in p else f"not computed (n = {p['n']})"
                for p in entry["pcd"].values()
            ]
            rows.append([value, len(g.bags), g.frames, *[_recall_cell(pooled.get(c)) for c in classes], *pcd_cells])
        targets = list(next(iter(attr_doc.values()))["pcd"]) if attr_doc else []
        recall_heads = [f"recall '{c}'" for c in classes]
        sec.table(
            [attr, "bags (n)", "frames (n)", *recall_heads, *[f"PCD / mPCD '{t}' (m)" for t in targets]],
            rows,
            f"Per {attr}: pooled over distance",
        )
        if metrics_by_value:
            svg = recall_small_multiples(metrics_by_value, attr, d / f"{attr}_recall.svg", alpha)
            sec.figure(svg.read_text(encoding="utf-8"), f"Recall vs distance per {attr} (one panel per value)")
        for target, per_value in pcd_by_target.items():
            if per_value:
                svg = pcd_small_multiples(per_value, attr, target, d / f"{attr}_pcd_{target}.svg")
                sec.figure(svg.read_text(encoding="utf-8"),
                           f"PCD of '{target}' per {attr} (one panel per value; not computed = why)")
        doc[attr] = attr_doc
    write_text(d / "breakdowns.json", json.dumps(doc, indent=1))
    ev.results["breakdowns"] = doc
