"""``perception-safety render BAG --out video.mp4``: a recorded episode as a video of the monitoring overlay."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "render",
        help="write a bag's monitoring overlay (detections, regions, tracks, verdicts) as an mp4 video",
        description="Runs the runtime monitors on a recorded bag's frames and writes each frame with the overlay "
        "the safety_monitor node publishes on ~/overlay (OpenCV VideoWriter, mp4v).",
    )
    p.add_argument("bag", help="rosbag2 directory (e.g. demo_out/episodes/bags/<episode>/<rollout>)")
    p.add_argument("--out", type=Path, required=True, help="video file to write (.mp4)")
    p.add_argument("--monitors", default="config/monitors.yaml",
                   help="YAML with the 'monitors' section (default config/monitors.yaml)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default: from the bag's stamps)")
    p.add_argument("--frames-dir", type=Path, default=None, help="also write PNG frames here")
    p.add_argument("--every", type=int, default=10, metavar="N", help="with --frames-dir: every N-th frame (10)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.config import load_model
    from perception_safety.io.paths import resolve_file
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.report.render import RenderError, render_bag

    if args.fps is not None and not args.fps > 0:
        raise RenderError(f"--fps must be > 0, got {args.fps}")
    monitors = load_model(resolve_file(args.monitors, "--monitors"), MonitorsConfig, section="monitors")
    stats = render_bag(args.bag, args.out, monitors, fps=args.fps, frames_dir=args.frames_dir, every=args.every)
    for line in stats.report.summary_lines()[1:]:
        print(f"warning: {line}", file=sys.stderr)
    if stats.without_image:
        print(f"warning: {stats.without_image} frame(s) without a usable image drawn on grey", file=sys.stderr)
    print(f"wrote {args.out}: {stats.frames} frames, {stats.size[0]}x{stats.size[1]} at {stats.fps:.1f} fps; "
          f"m_f alarm on {stats.alarms}, stop on {stats.stops} frame(s)")
    return 0
