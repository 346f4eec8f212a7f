"""``perception-safety bbsl check|eval|test``: BBSL spec analysis, evaluation of a box, specification-based testing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from perception_safety.errors import PerceptionSafetyError

if TYPE_CHECKING:  # the spec machinery (lark, numpy, pydantic) loads when a command runs, not for --help
    from perception_safety.bbsl.bindings import Binding
    from perception_safety.bbsl.config import BBSLConfig


def register(subparsers) -> None:
    p = subparsers.add_parser("bbsl", help="BBSL specifications: check, evaluate, specification-based testing")
    sub = p.add_subparsers(dest="bbsl_command", metavar="ACTION", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("spec", metavar="SPEC", help="a .bbsl specification file")
        sp.add_argument("--config", metavar="FILE", help="YAML config with a `bbsl` section (default: built-in)")
        sp.add_argument(
            "--bind",
            metavar="NAME=VALUE",
            action="append",
            default=[],
            help="bind an exfunction, e.g. stoppingDistance=[275,375], vehicle=subject (repeatable)",
        )
        sp.add_argument("--image-size", metavar="W,H", help="image width,height in pixels (default: config)")

    c = sub.add_parser("check", help="parse, type-check and analyse a spec (Definition 10)")
    common(c)
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.add_argument("--strict", action="store_true", help="exit 1 when a property fails")
    c.add_argument(
        "--time-budget",
        metavar="S",
        type=float,
        default=120.0,
        help="total seconds the z3 analysis may take (default 120); running out is an error, never a verdict",
    )
    c.set_defaults(func=run_check)

    e = sub.add_parser("eval", help="the cases that hold for given subject boxes")
    common(e)
    e.add_argument("--box", metavar="X_MIN,Y_MIN,X_MAX,Y_MAX", action="append", required=True, help="(repeatable)")
    e.add_argument("--json", action="store_true", help="print the result as JSON")
    e.set_defaults(func=run_eval)

    t = sub.add_parser("test", help="specification-based testing of detections against ground truth (Def. 11-13)")
    common(t)
    t.add_argument("inputs", metavar="INPUT", nargs="+", help="JSON Lines datasets (io.dataset) or rosbag2 bags")
    t.add_argument("--out", metavar="DIR", required=True, help="output directory")
    t.add_argument("--skip-bad", action="store_true", help="skip malformed dataset lines (counted)")
    t.set_defaults(func=run_test)


MAX_IMAGE_SIDE = 100_000
"""Largest image side accepted on the command line (pixels); beyond it a value is a typo, not a camera."""


def _image_size(text: str | None, cfg: BBSLConfig) -> tuple[float, float]:
    from perception_safety.bbsl.errors import BBSLError

    if text is None:
        return cfg.image_size
    try:
        w, h = (float(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise BBSLError(f"--image-size {text!r}: expected W,H, e.g. 1242,375", source="--image-size") from None
    if not (0 < w <= MAX_IMAGE_SIDE and 0 < h <= MAX_IMAGE_SIDE):  # also refuses nan and inf
        raise BBSLError(
            f"--image-size {text!r}: width and height must be positive and at most {MAX_IMAGE_SIDE} pixels",
            source="--image-size",
        )
    return (w, h)


def _setup(args) -> tuple[BBSLConfig, dict[str, Binding], tuple[float, float]]:
    from perception_safety.bbsl.bindings import parse_bind_option
    from perception_safety.bbsl.config import BBSLConfig
    from perception_safety.io.config import load_model

    cfg = load_model(args.config, BBSLConfig, section="bbsl")
    bindings = cfg.parsed_bindings()
    for item in args.bind:
        name, value = parse_bind_option(item)
        bindings[name] = value
    return cfg, bindings, _image_size(args.image_size, cfg)


def _box(text: str) -> list[float]:
    from perception_safety.bbsl.errors import BBSLError

    try:
        vals = [float(v) for v in text.strip("[]() ").split(",")]
    except ValueError:
        vals = []
    if len(vals) != 4 or vals[0] > vals[2] or vals[1] > vals[3] or any(v != v for v in vals):
        raise BBSLError(f"--box {text!r}: expected x_min,y_min,x_max,y_max with min <= max", source="--box")
    return vals


def run_check(args) -> int:
    from perception_safety.bbsl.analysis import AnalysisUnsupportedError, analyse  # z3: only when analysing
    from perception_safety.bbsl.errors import BBSLError
    from perception_safety.bbsl.spec import check_source

    _, bindings, size = _setup(args)
    checked = check_source(Path(args.spec))
    try:
        if not args.time_budget > 0:  # also refuses nan
            raise BBSLError(f"--time-budget must be a positive number of seconds, got {args.time_budget}")
        result = analyse(checked, bindings, size, budget_s=args.time_budget)
    except AnalysisUnsupportedError as exc:  # well-formed, but outside what the SMT encoding covers
        out = {"cases": list(checked.case_names), "exhaustive": None, "exclusionary": None, "non_redundant": None}
        out["counterexamples"] = {}
        out["note"] = exc.message
        print(json.dumps(out, indent=2) if args.json else f"{args.spec}: well-formed; not analysed: {exc.message}")
        return 1 if args.strict else 0
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(f"{args.spec}: {len(result.cases)} cases: {', '.join(result.cases)}")
        for prop in ("exhaustive", "exclusionary", "non_redundant"):
            ok = getattr(result, prop)
            line = f"  {prop.replace('_', '-'):<14} {'yes' if ok else 'NO'}"
            if not ok:
                line += f"  counterexample: {json.dumps(result.counterexamples.get(prop))}"
            print(line)
        if not result.precondition_satisfiable:
            print("  precondition   unsatisfiable inside the image")
    failed = not (result.exhaustive and result.exclusionary and result.non_redundant)
    return 1 if args.strict and failed else 0


def run_eval(args) -> int:
    from perception_safety.bbsl.spec import Spec, check_source

    _, bindings, size = _setup(args)
    spec = Spec(check_source(Path(args.spec)), bindings, size)
    boxes = [_box(b) for b in args.box]
    pre, cases = spec.evaluate_boxes(boxes)
    results = [
        {
            "box": box,
            "precondition": bool(pre[i]),
            "cases": [n for n, hit in zip(spec.case_names, cases[i], strict=True) if hit],
        }
        for i, box in enumerate(boxes)
    ]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
    else:
        for r in results:
            print(
                f"{r['box']}: {', '.join(r['cases']) or '(no case)'}"
                + ("" if r["precondition"] else "  [precondition fails]")
            )
    return 0


def _frames(inputs: list[str], config: str | None, skip_bad: bool):
    """Frames of JSON Lines datasets and rosbag2 bags (topics from the config's ``bags`` section)."""
    for item in inputs:
        path = Path(item)
        suffix = path.suffix.lower()
        if path.is_file() and suffix in (".jsonl", ".ndjson", ".json"):
            from perception_safety.io.dataset import read_jsonl_frames

            yield from read_jsonl_frames(path, skip_bad=skip_bad)
        elif path.is_dir() or (path.is_file() and suffix in (".mcap", ".db3")):
            from perception_safety.io.bag import BagConfig, read_bags
            from perception_safety.io.config import load_model

            bags = load_model(config, BagConfig, section="bags")
            yield from read_bags([path], bags.topics, bags.tolerance_ns, with_images=False)
        elif not path.exists():
            raise PerceptionSafetyError(f"{path}: no such file or directory")
        else:
            raise PerceptionSafetyError(f"{path}: unknown input type (expected a .jsonl dataset or a rosbag2 bag)")


def run_test(args) -> int:
    from perception_safety.bbsl.spec import Spec, check_source
    from perception_safety.evaluation.bbsl_testing import (
        BoxExtent,
        box_extent,
        format_report,
        image_size_mismatch,
        run_oracle,
        write_report,
    )

    cfg, bindings, size = _setup(args)
    spec = Spec(check_source(Path(args.spec)), bindings, size)

    extent = [BoxExtent()]

    def tracked():  # the boxes' extent, measured while the oracle streams the frames
        for frame in _frames(args.inputs, args.config, args.skip_bad):
            extent[0] = extent[0].merge(box_extent([frame], size))
            yield frame

    report = run_oracle(spec, tracked(), cfg)
    why = image_size_mismatch(extent[0], size)
    if why:
        print(f"warning: {why}", file=sys.stderr)
    summary, table = write_report(report, args.out)
    print(format_report(report))
    print(f"wrote {summary} and {table}")
    return 0
