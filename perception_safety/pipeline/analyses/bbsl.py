"""Evaluate step: BBSL specification-based testing beside the IoU baselines (Tables 3-4)."""

from __future__ import annotations

from pathlib import Path

from perception_safety.pipeline.analyses.base import Evaluation, pct
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Metric


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path) -> None:
    from perception_safety.evaluation.bbsl_testing import write_report

    d = out / "bbsl"
    sec = ev.report.section("BBSL specification-based testing")
    sec.text(
        "One test case per ground-truth object of the target classes "
        f"({', '.join(cfg.bbsl.target_classes)}); expected = the cases its ground-truth box satisfies, verdict T "
        "when the assigned detection satisfies the precondition and exactly the same cases (Definitions 11-13). "
        "A missed object fails the precondition and is F. IoU_t baselines: T when the assigned detection has "
        "IoU >= t (Table 3); breakdown by expectation x IoU verdict x BBSL verdict (Table 4)."
    )
    ev.results["bbsl"] = {}
    warn_image_size(ev, red, cfg)
    for name, rep in red.bbsl.items():
        write_report(rep, d / Path(name).stem)
        doc = rep.to_dict()
        per = red.bbsl_by_episode.get(name, [])
        if per and sum(n for _, _, n in per) == len(rep.test_cases):
            doc["by_episode"] = {
                "episodes": [e for e, _, _ in per],
                "T": [t for _, t, _ in per],
                "n": [n for *_, n in per],
            }
        ev.results["bbsl"][name] = doc
        t3 = doc["table3"]
        if not rep.test_cases:
            ev.warn(
                "bbsl",
                f"spec {name}: no test case: no ground-truth object of the target classes "
                f"({', '.join(cfg.bbsl.target_classes)}) in {rep.frames} frames ({rep.out_of_scope} out of scope); "
                "the pass rate is not computed.",
                "bbsl_no_cases",
            )
        rows = [
            ["BBSL" if k == "bbsl" else k.replace("iou_", "IoU_"), r["T"], r["F"], pct(r["rate"])]
            for k, r in t3.items()
        ]
        sec.table(
            ["test", "T (n)", "F (n)", "T/(T+F)"],
            rows,
            f"spec {name}: {len(rep.test_cases)} test cases from {rep.frames} frames",
        )
        t4 = doc["table4"]
        if t4:
            cols = list(next(iter(t4.values())))
            rows4 = [[exp] + [row[c]["count"] for c in cols] for exp, row in t4.items()]
            sec.table(["expectation", *cols], rows4, f"spec {name}: Table 4 breakdown")
            for exp, row in t4.items():
                for c in cols:
                    ex = row[c]["examples"]
                    if ex:
                        frames = ", ".join(f"{e['frame']}#{e['gt_index']} (IoU {e['iou']})" for e in ex)
                        sec.text(f"{name} · {exp} · {c}: e.g. {frames}", "note")
        if t3["bbsl"]["rate"] is not None:
            ev.report.summary.append(
                Metric(
                    f"BBSL pass rate ({Path(name).stem})",
                    100 * t3["bbsl"]["rate"],
                    "%",
                    f"n = {len(rep.test_cases)} test cases",
                )
            )


def warn_image_size(ev: Evaluation, red: Reduced, cfg: EvaluateConfig) -> None:
    """Many boxes reaching beyond ``bbsl.image_size``: the spec's image-relative regions are in the wrong place."""
    from perception_safety.evaluation.bbsl_testing import image_size_mismatch

    why = image_size_mismatch(red.box_extent, cfg.bbsl.image_size)
    if why:
        ev.warn("bbsl", why, "bbsl_image_size")
