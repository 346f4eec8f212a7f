"""``perception-safety compare RUN_A RUN_B --out DIR``: detector A vs B from two ``evaluate`` output folders."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perception_safety.safe_io import write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare two 'evaluate' runs (detector A vs B): every shared metric, its difference and significance",
        description="Reads RUN_A/results.json and RUN_B/results.json (two 'perception-safety evaluate' outputs), "
        "writes OUT/compare.json and OUT/compare.html: every shared metric side by side with B - A and, where both "
        "runs give an interval, whether the intervals are disjoint (significant); requirement verdicts side by "
        "side. Exit code 1 when B is worse (see --fail-on), 0 otherwise, 2 on bad input: usable as a CI gate.",
    )
    p.add_argument("run_a", metavar="RUN_A", type=Path, help="'evaluate' output folder of the baseline (A)")
    p.add_argument("run_b", metavar="RUN_B", type=Path, help="'evaluate' output folder of the candidate (B)")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="output directory")
    p.add_argument("--label-a", default="A", help="name of run A in the report (default 'A')")
    p.add_argument("--label-b", default="B", help="name of run B in the report (default 'B')")
    p.add_argument(
        "--fail-on",
        choices=("significant", "any", "never"),
        default="significant",
        help="exit 1 when B is significantly worse on any metric or a requirement that passed in A fails in B "
        "('significant', default), when B is worse at all or a requirement regressed ('any'), or never",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.pipeline.compare import compare, exit_code
    from perception_safety.pipeline.compare_input import load_run
    from perception_safety.report.compare_html import compare_report

    a, b = load_run(args.run_a), load_run(args.run_b)  # finished runs, checked shape
    doc: dict[str, Any] = compare(a, b)
    doc["runs"] = {
        "a": {"label": args.label_a, "path": str(args.run_a), "provenance": a.get("provenance")},
        "b": {"label": args.label_b, "path": str(args.run_b), "provenance": b.get("provenance")},
    }
    code = exit_code(doc, args.fail_on)
    doc["exit_code"] = code
    doc["fail_on"] = args.fail_on
    args.out.mkdir(parents=True, exist_ok=True)
    write_text((args.out / "compare.json"), json.dumps(doc, indent=1) + "\n")
    compare_report(doc, args.label_a, args.label_b).write(args.out / "compare.html")
    s = doc["summary"]
    for w in doc.get("warnings", []):
        print(f"warning [{w['kind']}]: {w['message']}", file=sys.stderr)
    print(
        f"{s['shared']} shared metrics: {args.label_b} better on {s['better']} ({s['significantly_better']} "
        f"significant), worse on {s['worse']} ({s['significantly_worse']} significant); requirements regressed: "
        f"{', '.join(s['requirements_regressed']) or 'none'}"
    )
    for r in doc["rows"]:
        if r["change"] == "worse" and r["significant"]:
            print(f"  significantly worse: {r['key']}: {r['a']:.4g} -> {r['b']:.4g}")
    print(f"wrote {args.out / 'compare.json'} and compare.html; exit code {code} (--fail-on {args.fail_on})")
    return code
