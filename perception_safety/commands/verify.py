"""``perception-safety verify``: the car–pedestrian Markov chain from confusion matrices, checked with Storm.

Writes ``OUT/verification.json`` (list ``results`` of variant/true_env/spec/max_speed/initial_speed/
probability), ``OUT/verification.csv``, ``OUT/verification.svg`` (Fig. 8 style) and, when
``verification.export`` asks for it, the chains under ``OUT/chains/``.
"""

from __future__ import annotations

import argparse
import sys
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
    p.add_argument("--matrices", type=Path, default=None,
                   help="confusion matrices: the confusion command's confusion.json or the reference format "
                   "(required unless --write-controller)")
    p.add_argument("--controller", default=None, metavar="CONTROLLER",
                   help="braking_rule (default), paper_modes, policy:FILE (CSV/JSON table) or python:module:function; "
                   "overrides verification.controller")
    p.add_argument("--write-controller", type=Path, default=None, metavar="FILE",
                   help="write the controller as a policy table (CSV) for every configured max speed and exit")
    p.add_argument("--config", type=Path, default=None, help="YAML file with a 'verification' section")
    p.add_argument("--max-speed", type=int, action="append", default=None, metavar="V",
                   help="largest speed V (repeatable); overrides verification.max_speeds")
    p.add_argument("--spec", action="append", default=None, metavar="NAME",
                   help="spec name to check (repeatable); overrides verification.specs")
    p.add_argument("--formula", action="append", default=None, metavar="NAME=FORMULA",
                   help="extra Storm formula over the labels, e.g. 'late=P=? [F \"past_k\"]' (repeatable)")
    p.add_argument("--export", choices=("none", "drn", "prism", "both"), default=None,
                   help="also write the chains (overrides verification.export)")
    p.add_argument("--no-plot", action="store_true", help="skip verification.svg")
    p.add_argument("--out", type=Path, default=None, help="output directory (required unless --write-controller)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load matrices and config, run the sweep, write JSON, CSV and the figure."""
    from perception_safety.evaluation.confusion.io import load_matrices
    from perception_safety.io.config import load_model
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.sweep import to_json_dict, write_csv, write_json
    from perception_safety.verification.sweep_each import sweep_each

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
    if args.controller:
        from perception_safety.verification.controllers import parse_controller, resolve_controller

        updates["controller"] = parse_controller(args.controller)
        resolve_controller(updates["controller"])  # a clear error for an unknown name or a bad table/callable
    from pydantic import ValidationError

    try:
        cfg = VerificationConfig.model_validate({**cfg.model_dump(by_alias=True), **updates})
    except ValidationError as exc:
        raise PerceptionSafetyError(f"verify: bad option: {exc}") from exc
    if args.write_controller is not None:
        return _write_controller(cfg, args.write_controller)
    if args.matrices is None or args.out is None:
        raise PerceptionSafetyError("verify: --matrices and --out are required (unless --write-controller)")

    confusion = load_matrices(args.matrices)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerceptionSafetyError(f"{args.out}: cannot create output directory: {exc.strerror or exc}") from exc
    sweep, skipped = sweep_each(confusion, cfg, args.out / "chains", str(args.matrices))
    for key, reason in skipped.items():
        print(f"warning: true environment/variant {key} not checked: {reason}", file=sys.stderr)
    if not sweep.results:
        raise PerceptionSafetyError(f"{args.matrices}: no true environment could be checked: "
                                    + "; ".join(f"{k}: {v}" for k, v in skipped.items()))  # fmt: skip
    doc = to_json_dict(sweep, str(args.matrices), confusion, cfg)
    doc["skipped"] = skipped
    doc["warnings"] += [f"true environment/variant {k} not checked: {v}" for k, v in skipped.items()]
    write_json(args.out / "verification.json", doc)
    write_csv(args.out / "verification.csv", sweep.results)
    written = ["verification.json", "verification.csv"]
    if not args.no_plot:
        from perception_safety.report.verification_plots import plot_satisfaction

        spec = cfg.plot.spec if cfg.plot.spec in sweep.specs else next(iter(sweep.specs))
        plot_satisfaction(sweep.results, args.out / "verification.svg", cfg.plot.true_env, spec, cfg.variants,
                          cfg.plot.log_scale)
        written.append("verification.svg")
    n_states = max(c["n_states"] for c in sweep.chains)
    print(f"controller: {sweep_controller_name(cfg)}")
    print(f"{len(sweep.results)} probabilities from {len(sweep.chains)} chains (largest {n_states} states); "
          f"wrote {', '.join(str(args.out / w) for w in written)}")
    spec = cfg.plot.spec if cfg.plot.spec in sweep.specs else next(iter(sweep.specs))
    for line in summary_lines(sweep.results, cfg.plot.true_env, spec, max(cfg.max_speeds), cfg.alpha):
        print(line)
    for warning in sweep.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def sweep_controller_name(cfg: Any) -> str:
    from perception_safety.verification.controllers import resolve_controller

    return resolve_controller(cfg.controller).name


def _write_controller(cfg: Any, path: Path) -> int:
    """Tabulate the configured controller for the reference geometry of every configured max speed."""
    from perception_safety.verification.car_model import geometry_for
    from perception_safety.verification.controllers import resolve_controller, write_policy

    resolved = resolve_controller(cfg.controller)
    geometries = [geometry_for(V, cfg.geometry) for V in cfg.max_speeds]

    def for_each(x: Any, v: Any, kind: str, g: Any) -> Any:
        fn = resolved.for_geometry(g)
        return fn(x, v, kind, g, alarm=False) if resolved.handles_alarm else fn(x, v, kind, g)

    write_policy(path, for_each, geometries)
    print(f"wrote {path}: {resolved.name} for max speeds {cfg.max_speeds}")
    return 0


def summary_lines(results: Any, env: str, spec: str, max_speed: int, alpha: float) -> list[str]:
    """``P(spec) = p [lower, upper]`` per variant and initial speed at the largest V (the bounds' meaning first)."""
    rows = [r for r in results if r["true_env"] == env and r["spec"] == spec and r["max_speed"] == max_speed]
    if not rows:
        return []
    out = [f"P({spec}) with true environment '{env}', V = {max_speed}: point [interval-chain lower, upper] "
           f"(Clopper-Pearson, every bound of a chain jointly at {1 - alpha:g})"
           + ("; posterior credible interval" if any("posterior_lower" in r for r in rows) else "")]
    for r in rows:
        band = "" if r.get("lower") is None else f" [{r['lower']:.4g}, {r['upper']:.4g}]"
        post = "" if r.get("posterior_lower") is None else (
            f"  posterior [{r['posterior_lower']:.4g}, {r['posterior_upper']:.4g}] "
            f"(MC error {r['posterior_mc_error']:.2g})")
        out.append(f"  {r['variant']:<18} v0={r['initial_speed']}: {r['probability']:.4g}{band}{post}")
    return out
