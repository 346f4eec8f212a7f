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
    p.add_argument("--frames-of", nargs=2, metavar=("RESULTS", "CELL"), default=None,
                   help="with --frames-dir: exactly the frames of this bag that an evaluate run keeps as evidence of "
                   "CELL (see `perception-safety frames RESULTS`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perception_safety.io.config import load_model
    from perception_safety.io.paths import resolve_file
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.report.render import RenderError, render_bag

    if args.fps is not None and not args.fps > 0:
        raise RenderError(f"--fps must be > 0, got {args.fps}")
    monitors = load_model(resolve_file(args.monitors, "--monitors"), MonitorsConfig, section="monitors")
    stamps = None
    if args.frames_of is not None:
        from perception_safety.pipeline.evidence import read_cell

        _, cell = read_cell(args.frames_of[0], args.frames_of[1])
        mine = [r for r in cell["refs"] if Path(r["bag"]).resolve() == Path(args.bag).resolve()]
        if not mine:
            bags = sorted({str(r["bag"]) for r in cell["refs"]})
            raise RenderError(f"{args.bag}: no frame of cell {args.frames_of[1]!r} is in this bag; its frames are "
                              f"in: {', '.join(bags)}")
        if args.frames_dir is None:
            raise RenderError("--frames-of needs --frames-dir (where the frames are written)")
        stamps = {int(r["stamp_ns"]) for r in mine}
    stats = render_bag(args.bag, args.out, monitors, fps=args.fps, frames_dir=args.frames_dir, every=args.every,
                       stamps=stamps)
    for line in stats.report.summary_lines()[1:]:
        print(f"warning: {line}", file=sys.stderr)
    if stats.without_image:
        print(f"warning: {stats.without_image} frame(s) without a usable image drawn on grey", file=sys.stderr)
    if stamps is not None:
        print(f"wrote {len(stamps)} frame(s) of {args.frames_of[1]} to {args.frames_dir}")
    print(f"wrote {args.out}: {stats.frames} frames, {stats.size[0]}x{stats.size[1]} at {stats.fps:.1f} fps; "
          f"m_f alarm on {stats.alarms}, stop on {stats.stops} frame(s)")
    return 0
