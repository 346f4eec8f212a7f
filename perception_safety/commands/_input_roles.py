"""The options that let a command read rollout bags it leaves out of folders by default (io.bag_inputs)."""

from __future__ import annotations

import argparse


def add_input_role_flags(p: argparse.ArgumentParser) -> None:
    """``--include-perfect-perception`` and ``--include-monitored`` (same meaning in every command)."""
    p.add_argument(
        "--include-perfect-perception",
        action="store_true",
        help="also read perfect-perception (f*, ground_truth rollout) bags found in a folder; by default they are "
        "listed but excluded, since their detections are the ground truth",
    )
    p.add_argument(
        "--include-monitored",
        action="store_true",
        help="also read monitored (f+m) rollout bags found in a folder; by default they are listed but excluded, "
        "since they repeat the perception rollout's frames until the monitor intervenes",
    )
