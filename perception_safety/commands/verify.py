"""``perception-safety verify``: the car–pedestrian Markov chain from confusion matrices, checked with Storm.

Writes ``OUT/verification.json`` (list ``results`` of variant/true_env/spec/max_speed/initial_speed/
probability), ``OUT/verification.csv``, ``OUT/verification.png`` (Fig. 8 style) and, when
``verification.export`` asks for it, the chains under ``OUT/chains/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError


def register(subparsers: Any) -> None:
    """Add the ``verify`` sub-command."""
    p = subparsers.add_parser(
        "verify",
        help="system-level verification: Markov chain from confusion matrices, checked with Storm",
        description="Build the car-pedestrian DTMC from class- and proposition-labeled confusion matrices "
        "(pooled and by distance) and compute P(s0 |= phi) with Storm for every initial speed.",
    )
    p.add_argument("--matrices", type=Path, required=True,
                   help="confusion matrices: the confusion command's confusion.json or the reference format")
    p.add_argument("--config", type=Path, default=None, help="YAML file with a 'verification' section")
    p.add_argument("--max-speed", type=int, action="append", default=None, metavar="V",
                   help="largest speed V (repeatable); overrides verification.max_speeds")
    p.add_argument("--spec", action="append", default=None, metavar="NAME",
                   help="spec name to check (repeatable); overrides verification.specs")
    p.add_argument("--formula", action="append", default=None, metavar="NAME=FORMULA",
                   help="extra Storm formula over the labels, e.g. 'late=P=? [F \"past_k\"]' (repeatable)")
    p.add_argument("--export", choices=("none", "drn", "prism", "both"), default=None,
                   help="also write the chains (overrides verification.export)")
    p.add_argument("--no-plot", action="store_true", help="skip verification.png")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load matrices and config, run the sweep, write JSON, CSV and the figure."""
    from perception_safety.evaluation.confusion.io import load_matrices
    from perception_safety.io.config import load_model
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.sweep import run_sweep, to_json_dict, write_csv, write_json

    cfg = load_model(args.config, VerificationConfig, section="verification")
    updates: dict[str, Any] = {}
    if args.max_speed:
        if any(v < 0 for v in args.max_speed):
            raise PerceptionSafetyError(f"--max-speed must be >= 0, got {args.max_speed}")
        updates["max_speeds"] = args.max_speed
    if args.formula:
        custom = dict(cfg.custom_specs)
        for item in args.formula:
            name, sep, formula = item.partition("=")
            if not sep or not name.strip() or not formula.strip():
                raise PerceptionSafetyError(f"--formula {item!r}: expected NAME=FORMULA")
            custom[name.strip()] = formula.strip()
        updates["custom_specs"] = custom
        if not args.spec:
            updates["specs"] = [*cfg.specs, *(n for n in custom if n not in cfg.specs)]
    if args.spec:
        updates["specs"] = args.spec
    if args.export:
        updates["export"] = args.export
    cfg = cfg.model_copy(update=updates)

    confusion = load_matrices(args.matrices)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerceptionSafetyError(f"{args.out}: cannot create output directory: {exc.strerror or exc}") from exc
    sweep = run_sweep(confusion, cfg, export_dir=args.out / "chains", name=str(args.matrices))
    write_json(args.out / "verification.json", to_json_dict(sweep, str(args.matrices), confusion, cfg))
    write_csv(args.out / "verification.csv", sweep.results)
    written = ["verification.json", "verification.csv"]
    if not args.no_plot:
        from perception_safety.report.verification_plots import plot_satisfaction

        spec = cfg.plot.spec if cfg.plot.spec in sweep.specs else next(iter(sweep.specs))
        plot_satisfaction(sweep.results, args.out / "verification.png", cfg.plot.true_env, spec, cfg.variants,
                          cfg.plot.log_scale)
        written.append("verification.png")
    n_states = max(c["n_states"] for c in sweep.chains)
    print(f"{len(sweep.results)} probabilities from {len(sweep.chains)} chains (largest {n_states} states); "
          f"wrote {', '.join(str(args.out / w) for w in written)}")
    return 0
