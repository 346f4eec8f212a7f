"""``perception-safety validate-model RESULTS_DIR NEW_INPUT... --config C --out DIR``: does new data still fit the
confusion model behind a previous `evaluate`? Exit 0 when it does, 1 when a column moved, 2 on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate-model",
        help="test whether new recordings still fit the confusion model behind a previous evaluate (exit 1 if not)",
        description="Compares, per confusion column (distance bin x true class), the detection rate of the model's "
        "data (the previous evaluate's per-episode partials) with that of the new inputs: a cluster-aware two-sample "
        "test with episodes as the unit and Holm's correction over columns; reports the smallest shift the data could "
        "detect (accepted does not prove the model holds) and P(phi) recomputed on the new counts. Exit 1 when a "
        "column moved: the verified P(phi) no longer applies.",
    )
    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="an `evaluate --out` folder (results.json, "
                   "partials/)")
    p.add_argument("inputs", nargs="+", metavar="NEW_INPUT", help="new bags, or folders searched for them")
    p.add_argument("--config", required=True, help="the config the model was evaluated with (its sha256 is checked "
                   "against the run's provenance)")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise error rate over the columns (0.05)")
    p.add_argument("--out", type=Path, required=True, help="output folder (validity.json, the new partials)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.paths import resolve_file
    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.validity import ValidityError, summary_lines, validate
    from perception_safety.safe_io.atomic_write import write_text

    if not 0 < args.alpha < 1:
        raise ValidityError(f"--alpha must lie in (0, 1), got {args.alpha}")
    config = resolve_file(args.config, "--config")
    cfg, text = load_evaluate_config(config)
    doc = validate(args.results, args.inputs, cfg, text, args.out, args.alpha)
    path = write_text(args.out / "validity.json", json.dumps(doc, indent=1) + "\n")
    for line in summary_lines(doc):
        print(line)
    print(f"wrote {path}")
    return 0 if doc["holds"] else 1
