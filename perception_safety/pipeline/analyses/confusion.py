"""Evaluate step: distance-binned confusion matrices, their metrics, tables and heatmaps."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from perception_safety.evaluation.confusion.io import to_json_dict, write_csv, write_json
from perception_safety.evaluation.confusion.metrics import (
    ClassMetrics,
    class_metrics,
    metrics_to_json,
    sampling_warnings,
)
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.confusion.uncertainty import thin_column_messages, thin_columns, thin_columns_to_json
from perception_safety.pipeline.analyses.base import Evaluation, pct
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric, Section


def rate_cell(value: float | None, lower: float | None, upper: float | None) -> str:
    """``53.0 % [31.2, 74.1]``: a rate with its interval in percent ('n/a' when undefined)."""
    if value is None or lower is None or upper is None:
        return "n/a"
    return f"{pct(value)} [{100 * lower:.1f}, {100 * upper:.1f}]"


def _thin_note(m: ClassMetrics, min_samples: int) -> str:
    return f"thin (< {min_samples})" if m.thin else ""


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.report.confusion_plots import plot_pages, plot_rates

    dc = red.confusion
    assert dc is not None
    ccfg = cfg.confusion
    d = out / "confusion"
    d.mkdir(parents=True, exist_ok=True)
    metrics = class_metrics(dc, ccfg.alpha, ccfg.min_samples)
    thin = thin_columns(dc, ccfg.min_samples)
    messages = thin_column_messages(thin, ccfg.min_samples)
    extra = {"min_samples": ccfg.min_samples, "thin_columns": thin_columns_to_json(thin), "warnings": messages}
    extra["sample_unit"] = ccfg.sample_unit
    if ccfg.sample_unit == "track_window":
        extra["track_window_s"] = ccfg.track_window_s
    doc = to_json_dict(dc, ccfg.empty_column, metrics=metrics_to_json(metrics), extra=extra, alpha=ccfg.alpha)
    write_json(
        d / "confusion.json", dc, empty_column=ccfg.empty_column, metrics=doc["metrics"], extra=extra, alpha=ccfg.alpha
    )
    write_csv(d / "confusion.csv", dc, ccfg.empty_column, ccfg.alpha)
    ev.results["confusion"] = doc
    for msg in messages:
        ev.warn("confusion", msg, "thin_columns")
    for msg in sampling_warnings(dc, ccfg.alpha, ccfg.min_clusters):
        ev.warn("confusion", msg, "sampling_unit")
    sec = ev.report.section("Confusion matrices (distance-binned)")
    if ccfg.sample_unit == "track_window":
        from perception_safety.evaluation.confusion.windows import sample_unit_note, untracked_warning

        sec.text(sample_unit_note(dc.report, ccfg.track_window_s), "note")
        if (w := untracked_warning(dc.report)) is not None:
            ev.warn("confusion", w, "untracked_objects")
    sec.text(
        "Class-labeled (one count per ground-truth object, Algorithm 2) and proposition-labeled (one count per "
        "frame and distance bin, Algorithm 1) matrices, cm[pred, true]: rows predicted, columns true, 'empty' last. "
        f"Bins are half-open [lo, hi) metres; matching at IoU >= {cfg.confusion.iou_threshold}"
        f"{' (class-aware)' if cfg.confusion.class_aware else ''}."
    )
    rep = dc.report
    if rep:
        sec.table(["counter", "value"], [[k, v] for k, v in rep.items() if not isinstance(v, dict | list)])
    rows = [
        [
            m.bin if m.bin == "pooled" else f"[{m.lo:g}, {m.hi:g})",
            m.label,
            m.ground_truth,
            m.true_positives,
            m.missed,
            rate_cell(m.recall, m.recall_lower, m.recall_upper),
            unit_cell(m.clusters, m.recall_design_effect, m.recall_effective_n),
            m.predicted + (m.unmatched or 0),
            rate_cell(m.precision, m.precision_lower, m.precision_upper) if m.unmatched is not None else "pooled only",
            rate_cell(m.precision_matched_only, m.precision_matched_only_lower, m.precision_matched_only_upper),
            _thin_note(m, ccfg.min_samples),
        ]
        for m in metrics
        if m.ground_truth > 0 and m.label != dc.empty_label
    ]
    level = f"{100 * (1 - ccfg.alpha):g} %"
    clustered = "cluster-aware (Korn-Graubard with beta-binomial profile, episodes as the unit)"
    method = clustered if dc.clusters is not None else "Clopper-Pearson"
    sec.table(
        [
            "bin (m)",
            "class",
            "ground truth (n)",
            "TP (n)",
            "missed (n)",
            f"recall [{level} CI]",
            "episodes, design effect, effective n",
            "detections (n)",
            f"precision, unmatched = false positive [{level} CI]",
            f"precision, matched only [{level} CI]",
            "flag",
        ],
        rows,
        f"Two-sided {method} intervals at {level}; 'thin' = fewer than {ccfg.min_samples} samples behind "
        "the rate (confusion.min_samples). Precision counts detections matched to no annotated object as false "
        "positives; per bin it needs their distance (confusion.ground_camera), else it is given pooled only.",
    )
    precision_two_ways(sec, dc, metrics)
    sec.figure(
        plot_rates(metrics, d / "rates_vs_distance.svg", ccfg.alpha).read_text(encoding="utf-8"),
        f"Recall and precision vs distance with {level} {method} error bars (precision per bin only where unmatched "
        "detections have a distance)",
    )
    for kind, name in (("class", "Class-labeled"), ("prop", "Proposition-labeled")):
        pages, skipped = plot_pages(dc, kind, d)  # only the figures the report shows are drawn (issue 27)
        empty = ", ".join(f"[{dc.bin_edges[k][0]:g}, {dc.bin_edges[k][1]:g})" for k in skipped)
        for i, page in enumerate(pages):
            caption = (
                f"{name} matrices, page {i + 1} of {len(pages)}: each cell shows the count (top) and P(pred | true) "
                "(bottom, also the colour; grey n/a: no sample of that true label); rows predicted, columns true."
            )
            if empty and i == len(pages) - 1:
                caption += f" Not drawn: bins {empty} m hold no ground-truth object (only empty frames)."
            sec.figure(page.read_text(encoding="utf-8"), caption)
    warn_labels(ev, dc, cfg)
    ped = [m for m in metrics if m.bin == "pooled" and m.recall is not None]
    for m in ped:
        unit = "objects" if ccfg.sample_unit == "frame" else f"track windows of {ccfg.track_window_s:g} s"
        ci = f"{level} CI [{m.recall_lower:.3f}, {m.recall_upper:.3f}], n = {m.ground_truth} {unit}"
        if m.clusters is not None:
            ci += f" in {m.clusters} episodes (design effect {m.recall_design_effect:.2g})"
        ev.report.summary.append(Metric(f"recall '{m.label}' (pooled)", m.recall, "", ci))


def unit_cell(clusters: int | None, deff: float, n_eff: float | None) -> str:
    """``10 ep., deff 4.2, n_eff 31`` (or why there is none) for the rate tables."""
    if clusters is None:
        return "no episode info (frames independent)"
    eff = "" if n_eff is None else f", n_eff {n_eff:.0f}"
    return f"{clusters} ep., deff {deff:.2g}{eff}"


def precision_two_ways(sec: Section, dc: DistanceConfusion, metrics: list[ClassMetrics]) -> None:
    """Pooled precision per class, from the class confusion only and with unmatched detections as false positives."""
    fp = dc.report.get("detections_unannotated_by_class", {})
    rows = []
    for m in metrics:
        if m.bin != "pooled" or m.label == dc.empty_label:
            continue
        extra = int(fp.get(m.label, 0))
        both = m.predicted + extra
        rows.append(
            [
                m.label,
                m.true_positives,
                m.predicted,
                extra,
                pct(m.precision_matched_only),
                pct(m.true_positives / both if both else None),
            ]
        )
    sec.table(
        [
            "class",
            "TP (n)",
            "matched detections of class (n)",
            "unmatched detections of class (n)",
            "precision, matched only (class confusion)",
            "precision, unmatched = false positive",
        ],
        rows,
        "Precision two ways (pooled over distance)",
    )
    sec.text(
        "Precision, matched only = TP / (matched detections predicted as the class): how often a detection "
        "that found an object named it right; it is 100 % whenever the detector never swaps classes. Precision, "
        "unmatched = false positive = TP / (all detections of the class): unmatched detections (ghosts, boxes with "
        "IoU below the threshold) count against it; this is the precision requirements and tables call "
        "'precision'. Unmatched detections have no ground-truth distance: per bin they are placed by the ground-plane "
        "distance of their box's bottom edge when confusion.ground_camera is set, else counted pooled only.",
        "note",
    )


def _case_hint(label: str, classes: dict[str, list[str]]) -> str | None:
    low = label.lower()
    for name, patterns in classes.items():
        if low == name.lower() or any(fnmatchcase(low, pat.lower()) for pat in patterns):
            return name
    return None


def warn_labels(ev: Evaluation, dc: DistanceConfusion, cfg: EvaluateConfig) -> None:
    """Unmapped labels above ``evaluate.warn_unmapped_fraction``, and matrices with no ground truth at all."""
    rep = dc.report
    limit = cfg.evaluate.warn_unmapped_fraction
    gt_seen = sum(
        rep.get(k, 0) for k in ("ground_truth_binned", "ground_truth_below_range", "ground_truth_beyond_range")
    )
    for what, unmapped, mapped in (
        ("ground-truth", rep.get("ground_truth_unmapped", {}), gt_seen),
        ("detection", rep.get("detections_unmapped", {}), rep.get("detections", 0)),
    ):
        n = sum(unmapped.values())
        total = n + mapped
        if not total or n / total <= limit:
            continue
        top = sorted(unmapped.items(), key=lambda kv: -kv[1])[:6]
        hints = [
            f"'{lab}' matches class '{c}' ignoring case"
            for lab, _ in top
            if (c := _case_hint(lab, cfg.confusion.classes))
        ]
        hint = (
            f" Labels are matched case-sensitively: {'; '.join(hints)}; add them to confusion.classes."
            if hints
            else " Add them to confusion.classes if they should count."
        )
        ev.warn(
            "confusion",
            f"{n} of {total} {what} labels ({100 * n / total:.1f} %) map to no class of confusion.classes and are not "
            f"counted: {', '.join(f'{lab} ({k})' for lab, k in top)}.{hint}",
            f"unmapped_{'ground_truth' if what == 'ground-truth' else 'detections'}",
        )
    if rep.get("ground_truth_binned", 0) == 0:
        ev.warn(
            "confusion",
            "no ground-truth object falls in any class and distance bin: every confusion matrix is all zeros (bin "
            f"edges {cfg.confusion.bin_edges[0]:g}-{cfg.confusion.bin_edges[-1]:g} m; below range "
            f"{rep.get('ground_truth_below_range', 0)}, beyond range {rep.get('ground_truth_beyond_range', 0)}).",
            "confusion_empty",
        )
