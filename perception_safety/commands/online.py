"""``perception-safety online --params config/online.yaml``: the three nodes in one process."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "online",
        help="run the ROS 2 nodes (safety_monitor, bbsl_monitor, returns_logger) in one process",
        description="Start the configured nodes in one process with a multi-threaded executor, with the parameters "
        "and remaps of one ROS 2 params file (a section per node, plus 'online:' for the node list and remaps). "
        "SIGINT/SIGTERM stop it with exit code 0.",
    )
    p.add_argument("--params", default="config/online.yaml",
                   help="ROS 2 params file with the node sections and an 'online' section (default config/online.yaml)")
    p.add_argument("--nodes", nargs="+", metavar="NODE", help="start only these nodes (default: the file's list)")
    p.add_argument("--record", metavar="DIR", default=None,
                   help="also write everything the nodes publish (verdicts, stop requests, diagnostics, overlay "
                   "markers) as a new MCAP bag in DIR (must not exist)")
    p.add_argument("--record-images", action="store_true", help="with --record: include the drawn overlay images")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.paths import resolve_file
    from perception_safety.ros.online import run_online

    return run_online(resolve_file(args.params, "--params"), args.nodes, args.record, args.record_images)
