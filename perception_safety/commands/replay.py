"""``perception-safety replay BAG [--rate X | --fast]``: publish a recorded bag with rclpy."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "replay",
        help="publish a rosbag2 bag's topics with rclpy (recorded rate, a multiple, or as fast as acknowledged)",
        description="Publish a recorded rosbag2 bag (sqlite3 or mcap) with rclpy, recorded stamps unchanged.",
    )
    p.add_argument("bag", help="rosbag2 directory")
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--rate", type=float, default=1.0, help="multiple of the recorded rate (default 1.0)")
    speed.add_argument("--fast", action="store_true",
                       help="no pacing: each message waits only for the subscribers' acknowledgement")
    p.add_argument("--topics", nargs="+", metavar="TOPIC", help="replay only these topics")
    p.add_argument("--wait-subscribers", type=float, default=5.0, metavar="S",
                   help="seconds to wait for subscribers before the first message (default 5)")
    p.add_argument("--sync-topic", metavar="TOPIC",
                   help="with --fast: wait for one message on TOPIC (a node's per-frame output) after each frame")
    p.add_argument("--node-name", default="perception_safety_replay")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from perception_safety.ros.replay import ReplayError, replay_bag

    if not args.fast and not args.rate > 0:
        raise ReplayError(f"--rate must be > 0, got {args.rate}")
    context = rclpy.Context()  # own context: works beside an rclpy already initialised in the same process
    rclpy.init(args=None, context=context)
    node = rclpy.create_node(args.node_name, context=context)
    try:
        stats = replay_bag(node, args.bag, None if args.fast else args.rate, args.topics, args.wait_subscribers,
                           sync_topic=args.sync_topic, should_stop=lambda: not context.ok())
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    for topic in stats.unsubscribed:
        print(f"warning: {topic}: no subscriber", file=sys.stderr)
    if stats.sync_timeouts:
        print(f"warning: {stats.sync_timeouts} frame(s) got no {args.sync_topic} message in time", file=sys.stderr)
    per_topic = ", ".join(f"{t}: {n}" for t, n in sorted(stats.published.items()))
    print(f"published {stats.total} message(s) in {stats.seconds:.2f} s ({per_topic})")
    return 0
