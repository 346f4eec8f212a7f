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
    p.add_argument("--sync-timeout", type=float, default=5.0, metavar="S",
                   help="seconds to wait for the --sync-topic message of one frame before going on (default 5)")
    p.add_argument("--ack-timeout", type=float, default=5.0, metavar="S",
                   help="without --sync-topic: seconds to wait at the end for subscribers to acknowledge (default 5)")
    p.add_argument("--require", nargs="+", metavar="TOPIC", default=[],
                   help="publish a frame (messages sharing a recording time) only when it has a message on each "
                   "of these topics; frames without a counterpart are skipped and counted")
    p.add_argument("--progress-every", type=float, default=2.0, metavar="S",
                   help="print progress every S seconds (default 2; 0 = only at the end)")
    p.add_argument(
        "--node-name", default="perception_safety_replay", help="ROS node name of the publisher (default %(default)s)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from perception_safety.ros.replay import ReplayError, ReplayStats, replay_bag

    if not args.fast and not args.rate > 0:
        raise ReplayError(f"--rate must be > 0, got {args.rate}")
    for name in ("wait_subscribers", "sync_timeout", "ack_timeout", "progress_every"):
        value = getattr(args, name)
        if not value >= 0:
            raise ReplayError(f"--{name.replace('_', '-')} must be >= 0, got {value}")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def progress(stats: ReplayStats) -> None:
        say(stats.line())

    from perception_safety.ros.transport import select_profile

    select_profile()  # before rclpy.init: the shared-memory profile that carries 1080p frames, as for the nodes
    context = rclpy.Context()  # own context: works beside an rclpy already initialised in the same process
    rclpy.init(args=None, context=context)
    node = rclpy.create_node(args.node_name, context=context)
    try:
        stats = replay_bag(node, args.bag, None if args.fast else args.rate, args.topics, args.wait_subscribers,
                           sync_topic=args.sync_topic, sync_timeout_s=args.sync_timeout,
                           should_stop=lambda: not context.ok(), require=args.require,
                           ack_timeout_s=args.ack_timeout, progress=progress if args.progress_every > 0 else None,
                           progress_period_s=args.progress_every or 2.0, log=say)
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    for topic in stats.unsubscribed:
        say(f"warning: {topic}: no subscriber")
    if stats.sync_timeouts:
        say(f"warning: {stats.sync_timeouts} frame(s) got no {args.sync_topic} message within {args.sync_timeout:g} s")
    if stats.skipped:
        parts = ", ".join(f"{t}: {n}" for t, n in sorted(stats.skipped.items()))
        say(f"warning: {stats.incomplete_groups} frame(s) without a message on every --require topic skipped ({parts})")
    per_topic = ", ".join(f"{t}: {n}" for t, n in sorted(stats.published.items()))
    print(f"published {stats.total} message(s) in {stats.seconds:.2f} s ({per_topic})")
    return 0
