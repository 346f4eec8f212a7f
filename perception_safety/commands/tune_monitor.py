"""``perception-safety tune-monitor INPUT... --config C --param monitors.contrast.threshold --values 800:2400:9
--out DIR [--require "rh_sys<=0.05"] [--maximise availability]``: a monitor's operating points."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune-monitor",
        help="sweep a monitor parameter over recorded rollouts: SG/RH/AC trade-off, Pareto front, chosen point",
        description="Reruns the safety_monitor node's own monitors over the recorded perception rollouts at every "
        "value of one or more numeric monitor parameters (one read of each bag) and computes, per operating point, "
        "E1 SG/RH/AC (classification form, episodes as clusters) and SG_sys/RH_sys/AC_sys of the monitored Markov "
        "chain, with intervals simultaneous over all points. Writes DIR/tuning.json, tradeoff.png, tuning.html and, "
        "when a point meets the requirements, DIR/monitors.tuned.yaml for the node. Exit 0 when a point was chosen "
        "(or no requirement was given), 1 when none meets the requirements, 2 on bad input.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="perception-rollout bags, or folders searched for them")
    p.add_argument("--config", required=True, help="evaluate-style YAML (bags, confusion, verification, returns; "
                   "monitors section or episodes.monitors_file)")
    p.add_argument("--monitors", metavar="YAML", help="the base monitors config (default: the config's)")
    p.add_argument("--param", action="append", required=True, metavar="PATH",
                   help="numeric monitor parameter, e.g. monitors.contrast.threshold (repeat for a grid)")
    p.add_argument("--values", action="append", required=True, metavar="LIST|start:stop:n",
                   help="its values: 'a,b,c' or 'start:stop:n' (one --values per --param, in order)")
    p.add_argument("--require", action="append", default=[], metavar="METRIC<=X|METRIC>=X",
                   help="requirement on a bound: sg, rh, ac (E1) or sg_sys, rh_sys, ac_sys, e.g. 'rh_sys<=0.05'")
    p.add_argument("--maximise", default="availability",
                   choices=["availability", "safety", "availability_sys", "safety_sys"],
                   help="objective among the points that meet the requirements by their bounds "
                   "(availability: the smallest AC)")
    p.add_argument("--speed", type=int, help="largest speed V of the chain (default: the config's largest)")
    p.add_argument("--initial-speed", type=int, help="initial speed v0 of the chain (default: V)")
    p.add_argument("--episodes", action="store_true",
                   help="also E2 per point: re-run the config's 'episodes' sweep on the builtin simulator with each "
                   "point's monitors (cached per point in DIR/e2/, resumable)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - simultaneous level of all intervals (0.05)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.config import load_model, load_yaml
    from perception_safety.io.paths import resolve_file
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.pipeline.evaluate_config import load_evaluate_config
    from perception_safety.pipeline.tuning import TuningRequest, run_tuning
    from perception_safety.pipeline.tuning.grid import TuningError
    from perception_safety.pipeline.tuning.run import base_monitors

    if not 0 < args.alpha < 1:
        raise TuningError(f"--alpha must lie in (0, 1), got {args.alpha}")
    config = resolve_file(args.config, "--config")
    cfg, _ = load_evaluate_config(config)
    if args.monitors:
        base = load_model(args.monitors, MonitorsConfig, section="monitors")
    else:
        base = base_monitors(load_yaml(config), config.parent)
    episodes = None
    if args.episodes:
        from perception_safety.sim.config import EpisodesConfig

        episodes = load_model(config, EpisodesConfig, section="episodes")
    req = TuningRequest(args.inputs, args.param, args.values, args.require, args.maximise, args.speed,
                        args.initial_speed, args.alpha, episodes)
    doc = run_tuning(req, cfg, base, args.out, progress=lambda bag: print(f"judged {bag}", flush=True))
    sel = doc["selection"]
    for row in doc["rows"]:
        e1, sy = row["e1"], row["system"]
        sys_txt = (" ".join(f"{k}={sy[k]['value']:.3g}[{sy[k]['lower']:.3g},{sy[k]['upper']:.3g}]"
                            for k in ("SG_sys", "RH_sys", "AC_sys") if k in sy and sy[k].get("lower") is not None)
                   or sy.get("error", ""))
        print(f"{row['label']:>32}  alarms {e1['alarm_rate']:.3f}  "
              + " ".join(f"{k}={e1[k]['value']:.3f}[{e1[k]['lower']:.3f},{e1[k]['upper']:.3f}]"
                         for k in ("SG", "RH", "AC")) + f"  {sys_txt}"
              + ("  E2 " + " ".join(f"{k}={row['e2'][k]['value']:.3f}[{row['e2'][k]['lower']:.3f},"
                                    f"{row['e2'][k]['upper']:.3f}]" for k in ("SG", "RH", "AC"))
                 if "e2" in row else ""))
    print(f"{doc['frames']} frames, {doc['episodes']} episodes; intervals simultaneous at {100 * doc['level']:g} % "
          f"({doc['simultaneous']})")
    print("Pareto front (SG up, AC down): " + ", ".join(doc["rows"][i]["label"] for i in doc["pareto_front"]))
    if sel.get("chosen") is not None:
        print(f"chosen: {doc['rows'][sel['chosen']]['label']} ({sel['objective_bound']} {sel['objective_value']:.3g});"
              f" wrote {args.out / 'monitors.tuned.yaml'}")
    elif sel["requirements"]:
        near = doc["rows"][sel["nearest"]]["label"] if sel.get("nearest") is not None else "-"
        print(f"no operating point meets {', '.join(sel['requirements'])}; nearest {near} misses by "
              f"{sel['nearest_miss']:.3g}")
    for w in doc["warnings"]:
        print(f"warning: {w}")
    print(f"wrote {args.out / 'tuning.json'}, {args.out / 'tuning.html'}")
    return 0 if sel.get("chosen") is not None or not sel["requirements"] else 1
